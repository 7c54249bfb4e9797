"""The parts of the `kubernetes` package the controller uses, without its generated classes.

The controller uses the package for one thing: its config loaders (`kubernetes.config`),
the well-kept code that reads a kubeconfig (tokens, token files, client certificates, exec
plugins, auth providers) or the in-cluster config into a `Configuration`
(foundation.cluster.connection reads that; the requests are ours). But `import kubernetes` runs `kubernetes/__init__.py`,
which imports every generated API and model class plus the dynamic client and its
schema validator (much of an idle controller's RSS: bench/README.md), and `kubernetes.config`
itself imports `kubernetes.client`. So the packages `kubernetes`, `kubernetes.client`
and `kubernetes.client.models` are registered as deferred modules: real packages (their
submodules import normally) whose `__init__` runs only when someone reads a name they
do not have yet. The controller never does; other code in the same process (the tests,
the envtest helpers) still gets the whole package on first use, e.g.
`from kubernetes.client import V1Pod`. If `kubernetes` is already imported, or the
package is laid out differently, this is a plain import.

`kubernetes.config.kube_config` also binds, at its top, three names only some loaders ever
call: `ApiClient` (for `new_client_from_config`: pydantic, dateutil and a thread pool come
with it), `OAuth2Session` (an OIDC auth provider's token refresh: `requests` comes with it)
and `oauthlib.oauth2` (that refresh's error class). They are bound to stand-ins that import
the real thing on first use, and only while that module is imported: afterwards
`kubernetes.client.ApiClient` and `requests_oauthlib` are the real ones again for any other
user, and `oauthlib` is a deferred package like the three above. Why: the three packages were
the largest part of the controller's RSS before its first request (bench/README.md, "Figures
the controller's code cites"); a kubeconfig with an OIDC provider still refreshes its token
(tests/controller/test_controller_kubelib.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

_DEFERRED = ("kubernetes", "kubernetes.client", "kubernetes.client.models", "oauthlib", "oauthlib.oauth2")
_COMPLETING_DUNDERS = frozenset({"__all__", "__version__", "__project__"})
_lock = threading.RLock()


class _Deferred(types.ModuleType):
    """A package whose `__init__` runs on the first lookup of a name it lacks."""

    def __getattr__(self, name: str) -> Any:
        # the import machinery and introspection probe dunders (__path__, __wrapped__ ...):
        # no reason to complete for those, except what the packages' __init__ define or
        # `from package import *` reads (`__all__`, else the completed __dict__)
        if name.startswith("__") and name not in _COMPLETING_DUNDERS:
            raise AttributeError(name)
        with _lock:
            if not self.__dict__.get("_deferred_done"):
                self.__dict__["_deferred_done"] = True  # set first: the __init__ probes names of its own
                self.__spec__.loader.exec_module(self)  # type: ignore[union-attr]
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def _defer(name: str) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not a package here")
    module = _Deferred(name)
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    module.__path__ = list(spec.submodule_search_locations)
    module.__package__ = name
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def _api_client(*args: Any, **kwargs: Any) -> Any:
    """kube_config's `ApiClient`: the real class, imported when a loader first builds one."""
    from kubernetes.client.api_client import ApiClient

    return ApiClient(*args, **kwargs)


def _oauth2_session(*args: Any, **kwargs: Any) -> Any:
    """kube_config's `OAuth2Session`: the real one, imported when an OIDC token is first refreshed."""
    from requests_oauthlib import OAuth2Session

    return OAuth2Session(*args, **kwargs)


def _load_light() -> None:
    """Register the deferred packages, then import the light submodules the controller uses."""
    stand_in = "requests_oauthlib" not in sys.modules
    deferred = [name for name in _DEFERRED if name not in sys.modules]  # an oauthlib imported before stays
    try:
        for name in deferred:
            _defer(name)
        client = sys.modules["kubernetes.client"]
        # submodules that `from kubernetes.client import X` reads back, imported first so no
        # such lookup misses (a miss would run the heavy __init__)
        for sub in ("exceptions", "rest", "configuration"):
            importlib.import_module(f"kubernetes.client.{sub}")
        client.Configuration = sys.modules["kubernetes.client.configuration"].Configuration  # type: ignore[attr-defined]
        client.ApiClient = _api_client  # type: ignore[attr-defined]  # while kube_config is imported (module docstring)
        if stand_in:
            oauth = types.ModuleType("requests_oauthlib")
            oauth.OAuth2Session = _oauth2_session  # type: ignore[attr-defined]
            sys.modules["requests_oauthlib"] = oauth
        importlib.import_module("kubernetes.config")
    except (ImportError, AttributeError):
        for name in list(sys.modules):  # only what this attempt registered: the plain imports then load all
            if name in deferred or name.startswith("kubernetes."):
                del sys.modules[name]
        raise
    finally:
        if stand_in:
            sys.modules.pop("requests_oauthlib", None)
        client_module = sys.modules.get("kubernetes.client")
        if client_module is not None and client_module.__dict__.get("ApiClient") is _api_client:
            del client_module.__dict__["ApiClient"]  # the next reader gets the real class


with _lock:
    if "kubernetes" not in sys.modules:
        try:
            _load_light()
        except (ImportError, AttributeError):
            pass  # an unexpected layout: the plain imports below load everything

from kubernetes.client.configuration import Configuration  # noqa: E402
from kubernetes.config import (  # noqa: E402
    ConfigException,
    load_incluster_config,
    load_kube_config,
)
from yaml import YAMLError  # noqa: E402  (the loaders parse kubeconfigs with PyYAML)

# what loading a config raises for bad input: the loaders' own error, a missing or
# unreadable file, a malformed value or exec plugin answer, a file that is not YAML
LOAD_ERRORS = (ConfigException, OSError, ValueError, YAMLError)

__all__ = ["LOAD_ERRORS", "ConfigException", "Configuration", "load_incluster_config", "load_kube_config"]
