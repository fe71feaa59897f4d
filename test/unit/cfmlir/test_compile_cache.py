"""The emitted-module cache: keyed by source, pipeline and the compiler's own code, so a changed
compiler never runs modules an older one emitted."""

import cfmlir.compiler as compiler
from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for


def test_cache_is_reused_and_keyed_by_the_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("CFMLIR_CACHE_DIR", str(tmp_path))
    text, file = certifier_source("ibp")
    compile_certifier(text, file, pipeline_for(True))
    first = sorted(tmp_path.iterdir())
    assert len(first) == 1
    compile_certifier(text, file, pipeline_for(True))
    assert sorted(tmp_path.iterdir()) == first  # a hit: nothing new written
    monkeypatch.setattr(compiler, "_FINGERPRINT", "another-compiler")
    compile_certifier(text, file, pipeline_for(True))
    assert len(list(tmp_path.iterdir())) == 2  # a different compiler misses the old module
    compile_certifier(text, file, pipeline_for(False))
    assert len(list(tmp_path.iterdir())) == 3  # and so does another pipeline


def test_fingerprint_is_stable_and_follows_the_compiler(monkeypatch):
    monkeypatch.setattr(compiler, "_FINGERPRINT", None)
    fp = compiler.compiler_fingerprint()
    assert len(fp) == 16 and compiler.compiler_fingerprint() == fp
    monkeypatch.setattr(compiler, "_FINGERPRINT", None)
    monkeypatch.setattr(compiler, "COMPILER_VERSION", "9.9.9")
    assert compiler.compiler_fingerprint() != fp


def test_fingerprint_beside_a_folder_named_cfmlir(tmp_path):
    """Run from the parent of a clone named ``cfmlir`` (a notebook beside the clone), ``import cfmlir``
    finds that folder as a namespace package without ``__file__``: the fingerprint (and so compiling)
    must not depend on it."""
    import subprocess
    import sys

    from cfmlir.compiler import compiler_fingerprint

    (tmp_path / "cfmlir").mkdir()
    code = "import cfmlir; from cfmlir.compiler import compiler_fingerprint as f; print(cfmlir.__file__, f())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    namespace_file, fingerprint = p.stdout.split()
    assert namespace_file == "None"  # the situation is reproduced
    assert fingerprint == compiler_fingerprint()
