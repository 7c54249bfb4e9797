"""How the controller reaches the API server: settings read from a kubeconfig or the
in-cluster config, requests sent with urllib3 by us.

The `kubernetes` package does one job here: its config loaders (`foundation.cluster.kubelib`) turn
a kubeconfig, or a pod's service-account files, into a `Configuration`. We read only that
object's documented settings (`host`, `ssl_ca_cert`, `cert_file`, `key_file`,
`verify_ssl`, `assert_hostname`, `tls_server_name`, `proxy`, `proxy_headers`, `no_proxy`)
and ask it for its credentials through `auth_settings()`, which runs the loader's refresh
hook (an exec plugin run again when its token expires, the in-cluster token file re-read
every minute). Nothing of the generated client's request path (`ApiClient`, its REST
layer, `update_params_for_auth`) is used: those changed signature between releases (the
controller could not start on kubernetes 37), and the controller sends raw JSON anyway.

A 401 means the credentials went stale before the loader knew (a rotated token file, an
exec plugin's token revoked early): `renew` loads the config again from the same source,
as client-go does on a 401, and the caller resends once if anything changed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any
from urllib.request import proxy_bypass_environment

import urllib3

from foundation.cluster.kubelib import LOAD_ERRORS

log = logging.getLogger("foundation.cluster.connection")

RENEW_INTERVAL = 5.0  # seconds: at most one reload per interval however many requests get a 401
AUTH_TTL = 1.0  # seconds a credential header is reused before the Configuration is asked again (Connection.auth)


def _auth_headers(cfg: Any) -> dict[str, str]:
    """The headers `cfg`'s credentials put on a request (runs its refresh hook)."""
    headers = {}
    for setting in (cfg.auth_settings() or {}).values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    return headers


def _manager(cfg: Any, maxsize: int) -> tuple[urllib3.PoolManager, bool]:
    """A pool manager with `cfg`'s TLS settings, through its proxy when it names one
    (and whether it does)."""
    tls: dict[str, Any] = {"cert_reqs": "CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE"}
    if cfg.ssl_ca_cert:
        tls["ca_certs"] = cfg.ssl_ca_cert
    if cfg.cert_file:
        tls["cert_file"], tls["key_file"] = cfg.cert_file, cfg.key_file
    if not cfg.verify_ssl:
        tls["assert_hostname"] = False
        # said once here instead of a urllib3 warning on every request
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        log.warning("TLS verification of %s is off (insecure-skip-tls-verify)", cfg.host)
    elif cfg.assert_hostname is not None:
        tls["assert_hostname"] = cfg.assert_hostname
    if cfg.tls_server_name:
        tls["server_hostname"] = cfg.tls_server_name  # SNI and the name the certificate must carry
    proxy = cfg.proxy
    # NO_PROXY as client-go reads it (kubernetes 35 and older drop it from the Configuration)
    no_proxy = cfg.no_proxy or os.environ.get("NO_PROXY") or os.environ.get("no_proxy")
    if proxy and no_proxy and proxy_bypass_environment(urllib3.util.parse_url(cfg.host).host or "", {"no": no_proxy}):
        proxy = None
    if not proxy:
        return urllib3.PoolManager(num_pools=4, maxsize=maxsize, **tls), False
    if proxy.startswith("socks"):
        from urllib3.contrib.socks import (
            SOCKSProxyManager,  # needs PySocks, as the kubernetes client does
        )

        return SOCKSProxyManager(proxy, num_pools=4, maxsize=maxsize, **tls), True
    return urllib3.ProxyManager(proxy, num_pools=4, maxsize=maxsize, proxy_headers=cfg.proxy_headers, **tls), True


class Connection:
    """One API server: its connection pool and the current credentials.

    `load` returns a fresh `Configuration` from the source the user chose (kubeconfig
    file and context, or in-cluster); it runs once now and again on `renew`.
    """

    def __init__(self, load: Callable[[], Any], *, pool_size: int = 16) -> None:
        self._load = load
        self._pool_size = pool_size
        self._lock = threading.Lock()  # the refresh hooks are not thread-safe (an exec plugin runs in them)
        self._renewed_at = -RENEW_INTERVAL
        self._auth: dict[str, str] = {}
        self._auth_until = 0.0
        self._use(load())

    def _use(self, cfg: Any) -> None:
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self._tls_key = (cfg.cert_file, cfg.key_file)
        self.manager, proxied = _manager(cfg, self._pool_size)
        # a server behind a path prefix (https://host/k8s) keeps it in front of every path
        self.prefix = (urllib3.util.parse_url(self.host).path or "").rstrip("/")
        self.pool = None if proxied else self.manager.connection_from_url(self.host)

    def auth(self) -> dict[str, str]:
        """Headers with the current credentials (refreshed by the loader when due).

        Asked of the Configuration at most once per AUTH_TTL: for a kubeconfig token its
        refresh hook rewrites every setting on each call, and with kubernetes 37 that
        re-reads the proxy environment, a cost per request that counts against the
        controller's CPU per pod (bench/README.md). Credentials the loaders refresh are renewed minutes
        before they expire, so a second's reuse changes nothing; a 401 bypasses it."""
        now = time.monotonic()
        if now < self._auth_until:
            return self._auth
        with self._lock:
            self._auth, self._auth_until = _auth_headers(self.cfg), now + AUTH_TTL
            return self._auth

    def renew(self, sent: dict[str, str]) -> bool:
        """After a 401 for a request sent with `sent`: load the config again; True when the
        credentials changed, so resending can help."""
        with self._lock:
            current = _auth_headers(self.cfg)
            if current != sent:  # another thread renewed already, or the loader's hook just did
                self._auth, self._auth_until = current, time.monotonic() + AUTH_TTL
                return True
            if time.monotonic() - self._renewed_at < RENEW_INTERVAL:
                return False
            self._renewed_at = time.monotonic()
            try:
                cfg = self._load()
            except LOAD_ERRORS as exc:  # the 401 stands; said once per interval
                log.warning("could not reload credentials after a 401: %s", exc)
                return False
            fresh = _auth_headers(cfg)
            if fresh == sent and (cfg.cert_file, cfg.key_file) == self._tls_key:
                return False
            old = self.manager
            self._use(cfg)
            self._auth, self._auth_until = fresh, time.monotonic() + AUTH_TTL
            old.clear()
            log.info("credentials reloaded after a 401")
            return True

    def urlopen(self, method: str, path: str, **kw: Any) -> Any:
        """Send straight through the server's connection pool (a proxy keeps the manager's way):
        no URL parse or pool lookup per request, and it never redirects."""
        pool = self.pool
        if pool is None:
            return self.manager.request(method, self.host + path, preload_content=False, redirect=False, **kw)
        return pool.urlopen(method, self.prefix + path, preload_content=False, redirect=False,
                            assert_same_host=False, **kw)

    def close(self) -> None:
        self.manager.clear()
