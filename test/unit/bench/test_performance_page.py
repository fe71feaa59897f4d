"""docs/performance.md and the README's cf-verify table are what bench/performance_page.py makes of bench/results."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_performance_page_is_up_to_date() -> None:
    proc = subprocess.run([sys.executable, "bench/performance_page.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_check_fails_when_a_figure_changes(tmp_path, monkeypatch) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import performance_page
    finally:
        sys.path.remove(str(ROOT / "bench"))
    page = tmp_path / "performance.md"
    text = performance_page.page()
    changed = re.sub(r"\| (\d)", lambda m: f"| {(int(m.group(1)) + 1) % 10}", text, count=1)  # one figure in a table
    assert changed != text
    page.write_text(changed)
    monkeypatch.setattr(performance_page, "PAGE", page)
    monkeypatch.setattr(performance_page, "ROOT", tmp_path)
    assert performance_page.stale() == ["performance.md"]
    assert performance_page.main(["--check"]) == 1
