#!/usr/bin/env python3
"""Fail on a link to a repository path that does not exist.

Checks the links and images of the Markdown front pages (inline ``[text](dest)`` and ``![alt](dest)``, reference
definitions ``[label]: dest``, autolinks ``<dest>``, HTML ``href=`` / ``src=``) and the URLs of the pyproject.toml
files' ``[project.urls]``:

- a relative destination is resolved against the directory of the file that holds it (a leading ``/`` against the
  repository root), without its ``#anchor`` or ``?query``;
- a URL of a file or folder in this repository on GitHub (``<repository>/blob/<ref>/<path>``, ``/tree/``, ``/raw/``;
  the repository is the first of the root pyproject's ``[project.urls]`` that is a GitHub repository) is checked
  as ``<path>``;
- anchors alone, mailto: and URLs of other hosts or repositories are not checked; nor is anything in code (fenced
  blocks, code spans) or in HTML comments. Indented code blocks are not recognized.

Usage: ``python .ci/check_links.py [--root DIR] [FILE ...]``, FILE relative to the root; by default README.md and
whichever files of ``DEFAULT_FILES`` exist. A ``.toml`` file is read for its ``[project.urls]``, any other as
Markdown. Exits 1 listing every missing path, 2 when a named file is missing. Standard library only: CI runs it
before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: read [project.urls] line by line instead
    tomllib = None  # type: ignore[assignment]

#: What CI checks (globs under the root): the pages a code host shows first and the URLs a package index shows.
DEFAULT_FILES = ("README.md", "docs/README.md", "pyproject.toml", "plugins/*/README.md", "plugins/*/pyproject.toml")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
# [text](dest "title") and ![alt](dest): text with one level of nested brackets, dest in <...> or bare with
# balanced parentheses.
_INLINE = re.compile(
    r"!?\[(?P<text>(?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]"
    r"\(\s*(?P<destination><[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_REFERENCE = re.compile(r"^ {0,3}\[(?!\^)[^\]]+\]:\s*(<[^<>\n]*>|\S+)", re.M)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>")
_HTML_ATTRIBUTE = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_GITHUB = re.compile(r"^https?://(?:www\.)?github\.com/([^/]+/[^/#?]+?)(?:\.git)?/?$", re.I)


@dataclass(frozen=True)
class Link:
    """A link destination as written, where it was found, and the directory a relative one is resolved from."""

    source: str
    line: int
    destination: str
    base: Path


@dataclass(frozen=True)
class Problem:
    link: Link
    reason: str

    def __str__(self) -> str:
        return f"{self.link.source}:{self.link.line}: {self.link.destination}: {self.reason}"


def _blank(match: re.Match[str]) -> str:
    """The matched text with everything but its newlines replaced by spaces (line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _strip_code(text: str) -> str:
    """``text`` with fenced code blocks, HTML comments and code spans blanked out."""
    lines = text.split("\n")
    fence: str | None = None
    for i, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is None:
            if opening:
                fence = opening.group(1)
                lines[i] = ""
        else:
            lines[i] = ""
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) and (
                line.strip() == opening.group(1)
            ):
                fence = None
    text = "\n".join(lines)
    text = _COMMENT.sub(_blank, text)
    return _CODE_SPAN.sub(_blank, text)


def markdown_links(path: Path, name: str) -> list[Link]:
    """Every link and image destination of the Markdown file ``path`` (``name``: how to report it)."""
    text = _strip_code(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for pattern in (_REFERENCE, _AUTOLINK, _HTML_ATTRIBUTE):
        found.extend((match.start(1), match.group(1)) for match in pattern.finditer(text))
    # An inline link's text may hold an image (a badge: [![alt](image)](link)): search the text too.
    spans = [(0, len(text))]
    while spans:
        start, end = spans.pop()
        for match in _INLINE.finditer(text, start, end):
            found.append((match.start("destination"), match.group("destination")))
            spans.append(match.span("text"))
    links = []
    for offset, destination in sorted(found):
        if destination.startswith("<") and destination.endswith(">"):
            destination = destination[1:-1]
        links.append(Link(name, text.count("\n", 0, offset) + 1, destination, path.parent))
    return links


def project_urls(path: Path, name: str) -> list[Link]:
    """The URLs of pyproject.toml's ``[project.urls]``, each reported at its line."""
    text = path.read_text(encoding="utf-8")
    if tomllib is not None:
        urls: dict[str, str] = tomllib.loads(text).get("project", {}).get("urls", {})
    else:
        section = re.search(r"^\[project\.urls\][ \t]*\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
        body = section.group(1) if section else ""
        urls = dict(re.findall(r"""^\s*["']?([\w .-]+?)["']?\s*=\s*["']([^"']*)["']""", body, re.M))
    links = []
    for url in urls.values():
        offset = max(text.find(f'"{url}"'), text.find(f"'{url}'"))
        links.append(Link(name, text.count("\n", 0, offset) + 1 if offset >= 0 else 0, url, path.parent))
    return links


def repository_url(pyproject: Path) -> str | None:
    """``https://github.com/<owner>/<name>``: the first of ``[project.urls]`` that is a GitHub repository."""
    if not pyproject.is_file():
        return None
    for link in project_urls(pyproject, pyproject.name):
        match = _GITHUB.match(link.destination)
        if match:
            return f"https://github.com/{match.group(1)}"
    return None


def _repository_path(repository: str) -> re.Pattern[str]:
    """Matches a URL of a file or folder in ``repository`` on GitHub; group 1 is its path in the repository."""
    owner_name = re.escape(repository.split("github.com/", 1)[1])
    return re.compile(rf"^https?://(?:www\.)?github\.com/{owner_name}/(?:blob|tree|raw)/[^/#?]+/?([^#?]*)", re.I)


def check(link: Link, root: Path, repository: str | None) -> Problem | None:
    """Why ``link`` points at a repository path that does not exist, or None (fine or not checked)."""
    destination = link.destination.strip()
    if not destination or destination.startswith("#"):
        return None
    if _SCHEME.match(destination) or destination.startswith("//"):
        match = _repository_path(repository).match(destination) if repository else None
        if not match:
            return None
        target = root / unquote(match.group(1))
    else:
        relative = unquote(urlsplit(destination).path)
        if not relative:
            return None
        target = root / relative.lstrip("/") if relative.startswith("/") else link.base / relative
    resolved = target.resolve()
    if not resolved.is_relative_to(root.resolve()):
        return Problem(link, f"resolves to {resolved}, outside the repository")
    if not resolved.exists():
        return Problem(link, f"{resolved.relative_to(root.resolve())} does not exist")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="repository root")
    parser.add_argument("files", nargs="*", help=f"files to check, relative to --root (default: {DEFAULT_FILES})")
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    others = {path.relative_to(root).as_posix() for pattern in DEFAULT_FILES[1:] for path in root.glob(pattern)}
    names: list[str] = args.files or ["README.md", *sorted(others)]
    repository = repository_url(root / "pyproject.toml")
    links: list[Link] = []
    for name in names:
        path = root / name
        if not path.is_file():
            print(f"check_links: {name}: no such file under {root}", file=sys.stderr)
            return 2
        links.extend(project_urls(path, name) if path.suffix == ".toml" else markdown_links(path, name))
    problems = [problem for link in links if (problem := check(link, root, repository)) is not None]
    for problem in problems:
        print(problem, file=sys.stderr)
    checked = ", ".join(names)
    if problems:
        print(
            f"check_links: {len(problems)} of {len(links)} links in {checked} point at missing paths",
            file=sys.stderr,
        )
        return 1
    print(f"check_links: {len(links)} links in {checked}, no missing path")
    return 0


if __name__ == "__main__":
    sys.exit(main())
