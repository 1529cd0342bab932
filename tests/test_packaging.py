"""environment.yml (conda users) and pyproject.toml (pip users) must ask for the same things."""

from __future__ import annotations

import re
import tomllib

import yaml

from conftest import ROOT

CONDA_NAMES = {"torch": "pytorch"}  # PyPI name → conda-forge name


def _split(requirement: str) -> tuple[str, str]:
    m = re.match(r"^([A-Za-z0-9_.-]+)(.*)$", requirement.strip())
    return m.group(1).lower(), m.group(2).replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(_split(r) for r in project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = dict(_split(d) for d in env["dependencies"] if isinstance(d, str) and not d.startswith(("python", "pip")))
    # a package that only PyPI has is in the pip section (besides ``-e .``, the project itself)
    pip = [d for d in env["dependencies"] if isinstance(d, dict) and "pip" in d][0]["pip"]
    conda.update(_split(d) for d in pip if not d.startswith("-e"))
    expected = {CONDA_NAMES.get(name, name): spec for name, spec in wanted.items()}
    assert conda == expected


def test_python_requirement_matches():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert f"python{project['requires-python']}" in env["dependencies"]


def test_registry_is_package_data():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "data/corpora.yaml" in setuptools["package-data"]["nmtlib"]
