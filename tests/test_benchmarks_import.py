"""Every benchmark (bench_*.py) imports and answers --help (they run only on lent machines, so a
broken import would otherwise surface there first)."""
import importlib
import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
SCRIPTS = sorted(p.stem for p in BENCH.glob("bench_*.py"))


@pytest.mark.parametrize("name", SCRIPTS)
def test_benchmark_imports_and_has_help(name, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCH))
    module = importlib.import_module(name)
    if not hasattr(module, "main"):
        return
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as e:
        module.main()
    assert e.value.code == 0
    assert "usage" in capsys.readouterr().out
