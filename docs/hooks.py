"""mkdocs hooks (mkdocs.yml `hooks:`): the repository's Markdown files outside docs/ as pages of the site.

Why it is shaped so: README.md is the repository's front page and the site's home, and
controller/README.md and bench/README.md sit beside the code they describe; each is written
once, for GitHub, and shown on the site too (PAGES). Every link is written as a path in the
repository (`docs/plan.md` in the README, `../controller/README.md#events` in a page), which
GitHub follows as it is; here each is turned into the site's path before mkdocs looks at it,
so the strict build checks every link and anchor whichever file it was written in. A link to
a repository file that is no page (a source file, an example) would lead nowhere on the site,
so it fails the build: write it as `code`, or add the file to PAGES.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[1]
# repository path -> the page it is on the site (a page of docs/ is itself, without "docs/")
PAGES = {"README.md": "index.md", "controller/README.md": "controller-internals.md",
         "bench/README.md": "benchmarks.md"}
FENCE = re.compile(r"^\s*(```|~~~)")
# inline code (left as it is) or a link's target: [text](target)
LINK = re.compile(r"(?P<code>(?P<ticks>`+).+?(?P=ticks))|\]\((?P<target>[^)\s]+)\)")

log = get_plugin_logger(__name__)  # a warning fails `mkdocs build --strict`


def on_files(files, config):
    for repo_path, page in PAGES.items():
        files.append(File.generated(config, page, abs_src_path=str(REPO / repo_path)))
    return files


def on_page_markdown(markdown, page, config, files):
    here = next((repo for repo, site in PAGES.items() if site == page.file.src_uri), f"docs/{page.file.src_uri}")
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = LINK.sub(lambda m: m.group(0) if m.group("code") else f"]({_site_target(m['target'], here, page)})",
                            line)
        lines.append(line)
    return "\n".join(lines)


def _site_target(target: str, here: str, page) -> str:
    """`target`, a link written in the repository file `here`, as a link from `page` on the site."""
    url = urlsplit(target)
    if url.scheme or url.netloc or not url.path or target.startswith("/"):
        return target  # elsewhere on the web, an anchor on this page, or mkdocs' own warning
    repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(here), url.path))
    if repo_path.startswith("docs/"):
        site = repo_path.removeprefix("docs/")
    elif repo_path in PAGES:
        site = PAGES[repo_path]
    else:
        log.warning(f"{here} links to {target}: {repo_path} is no page of the site; write it as `code`, "
                    "or add it to PAGES in docs/hooks.py")
        return target
    link = posixpath.relpath(site, posixpath.dirname(page.file.src_uri) or ".")
    return f"{link}#{url.fragment}" if url.fragment else link
