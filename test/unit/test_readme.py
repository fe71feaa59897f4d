"""The README stays short and true: every shell command and Python block in it runs, every link resolves.

Each ``sh`` block's commands (a trailing ``\\`` joins lines, ``#`` starts a comment) run from the
repository root and must exit 0.  Two are not run as written:

- ``make test`` would run this suite inside itself: ``make -n test`` must plan pytest and the lit suite,
  and ``.ci/run`` must call ``make test`` (so the README's test command is CI's);
- a command naming ``../shared`` skips cleanly when ``../shared`` is absent.

Every ``python`` block runs in a fresh interpreter.  Every relative link of the README and of
``docs/*.md`` names an existing file, and ``docs/index.md`` lists every page in ``docs/``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SHARED = ROOT.parent / "shared"


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def _commands(block: str) -> list[str]:
    joined = block.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = line.split("  #", 1)[0].strip() if "  #" in line else line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def readme_commands() -> list[str]:
    return [c for b in _blocks(README.read_text(), "sh") for c in _commands(b)]


def test_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= 200


def test_readme_opens_with_the_two_commands() -> None:
    first = readme_commands()[:2]
    assert first == ["make demo", "make test"], first


def test_make_test_is_what_ci_runs() -> None:
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), flags=re.M)
    plan = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert plan.returncode == 0, plan.stderr
    assert "pytest -W error -q test/unit" in plan.stdout and "test/run_lit.py" in plan.stdout


@pytest.mark.parametrize("command", [c for c in readme_commands() if c != "make test"])
def test_readme_command_runs(command: str) -> None:
    if "../shared" in command and not SHARED.is_dir():
        pytest.skip("needs ../shared")
    proc = subprocess.run(shlex.split(command), cwd=ROOT, capture_output=True, text=True, timeout=570)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


@pytest.mark.parametrize("index", range(len(_blocks(README.read_text(), "python"))))
def test_readme_python_block_runs(index: int) -> None:
    code = _blocks(README.read_text(), "python")[index]
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=570)
    assert proc.returncode == 0, f"{code}\n{proc.stderr[-3000:]}"


# Pages that other branches add and others already link (none now); once such a page exists, its entry
# here must go (test_pending_pages_are_still_missing).
PENDING_PAGES: set[str] = set()


def _pages() -> list[Path]:
    return [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if path.parent == ROOT / "docs" and path.name in PENDING_PAGES:
            continue
        assert path.exists(), f"{page.name}: link to {target} names no file"


def test_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md" and f"]({p.name})" not in index]
    assert not missing, f"docs/index.md does not list {missing}"


def test_pending_pages_are_still_missing() -> None:
    written = [name for name in PENDING_PAGES if (ROOT / "docs" / name).exists()]
    assert not written, f"docs/{written} exist now: remove them from PENDING_PAGES and list them in docs/index.md"
