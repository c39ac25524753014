"""The usage example of README.md runs as printed."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.skipif(not README.exists(), reason="README.md not next to tests/")
def test_readme_usage_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    exec(compile(code, str(README), "exec"), {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert float(lines[0]) > 0.83  # test accuracy on a9a
    assert float(lines[1].split()[0]) > 0.83
