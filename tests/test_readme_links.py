"""The front pages link only to repository paths that exist (.ci/check_links.py, which CI runs before installing)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / ".ci" / "check_links.py"


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECKER), *args], capture_output=True, text=True, timeout=60)


def test_the_real_front_pages_have_no_dead_repository_link():
    result = _check()
    assert result.returncode == 0, result.stderr
    assert "README.md" in result.stdout and "pyproject.toml" in result.stdout


def test_a_broken_link_fails_and_is_listed(tmp_path: Path):
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "guide" / "page.md").write_text("# page\n")
    (tmp_path / "logo.png").write_bytes(b"")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[project.urls]\nSource = "https://github.com/owner/repo"\n'
        'Documentation = "https://github.com/owner/repo/tree/main/docs/gone"\n'
        'Issues = "https://github.com/owner/repo/issues"\n'
    )
    (tmp_path / "README.md").write_text(
        "# x\n\n"
        "[fine](docs/guide/page.md#a-heading) ![fine](logo.png) [fine](#anchor) [fine](https://example.com/missing.md)\n"
        "<mailto:someone@example.com> `[in code](code-missing.md)`\n\n"
        "```text\n[in a fence](fence-missing.md)\n```\n\n"
        "<!-- [in a comment](comment-missing.md) -->\n"
        "[broken](docs/guide/missing.md) and [![badge](badge-missing.svg)](logo.png)\n"
        "[outside](../elsewhere.md)\n"
    )
    result = _check("--root", str(tmp_path))
    assert result.returncode == 1
    reported = result.stderr
    assert "README.md:11: docs/guide/missing.md: docs/guide/missing.md does not exist" in reported
    assert "badge-missing.svg does not exist" in reported
    assert "outside the repository" in reported
    assert "pyproject.toml:6: https://github.com/owner/repo/tree/main/docs/gone: docs/gone does not exist" in reported
    assert "4 of" in reported
    for not_checked in ("code-missing", "fence-missing", "comment-missing", "example.com", "issues"):
        assert not_checked not in reported

    (tmp_path / "README.md").write_text("[fine](docs/guide/page.md)\n")
    (tmp_path / "pyproject.toml").write_text('[project.urls]\nSource = "https://github.com/owner/repo"\n')
    assert _check("--root", str(tmp_path)).returncode == 0


def test_docs_readme_links_every_page_of_the_site():
    """docs/README.md, the code host's view of docs/, lists every page of the site's tables of contents."""
    index = (ROOT / "docs" / "index.md").read_text()
    toctrees = re.findall(r"```\{toctree\}\n(.*?)```", index, flags=re.S)
    pages = [line.strip() for block in toctrees for line in block.splitlines() if line.strip() and ":" not in line]
    assert len(pages) >= 10
    listed = (ROOT / "docs" / "README.md").read_text()
    for page in pages:
        assert re.search(rf"\]\({re.escape(page)}\.(md|rst)\)", listed), f"docs/README.md does not link {page}"
