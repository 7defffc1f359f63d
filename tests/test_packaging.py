"""How labkit is packaged: the package list is found, not typed; pyproject.toml is the one
list of requirements, which requirements.lock pins and requirements.txt repeats pinned; a
build without Python's headers says which package to install. Fast: nothing is built here
(tests/test_wheel.py builds)."""
import importlib.util
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def package_folders() -> set[str]:
    """Every folder of labkit/ with an __init__.py, as a dotted package name."""
    return {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "labkit").rglob("__init__.py")
            if "__pycache__" not in p.parts}


def declared_requirements() -> list[Requirement]:
    """pyproject.toml's build tools, dependencies and every extra's packages."""
    project = PYPROJECT["project"]
    texts = [*PYPROJECT["build-system"]["requires"], *project["dependencies"],
             *sum(project["optional-dependencies"].values(), [])]
    return [Requirement(t) for t in texts]


def locked() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_setuptools_finds_every_package():
    from setuptools.dist import Distribution
    from setuptools.config.pyprojecttoml import apply_configuration

    assert "find" in PYPROJECT["tool"]["setuptools"]["packages"], "packages are found, not typed"
    dist = apply_configuration(Distribution(), REPO / "pyproject.toml")
    assert "labkit.lab.analysis" in package_folders()
    assert set(dist.packages) == package_folders()


def setup_extras() -> list[str]:
    """The extras `make setup` installs (the Makefile's EXTRAS)."""
    makefile = (REPO / "Makefile").read_text()
    return re.search(r"^EXTRAS\s*:?=\s*(\S+)", makefile, re.M).group(1).split(",")


def test_requirements_lock_pins_what_pyproject_declares():
    assert sorted(p.name for p in REPO.glob("requirements*")) == ["requirements.lock",
                                                                   "requirements.txt"]
    pins = locked()
    for req in declared_requirements():
        name = canonicalize_name(req.name)
        if name == "labkit":
            continue  # an extra naming another extra of labkit itself
        assert name in pins, f"{req} is not pinned in requirements.lock"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"requirements.lock pins {name}=={pins[name]}, outside pyproject.toml's {req}"


def test_requirements_txt_is_pyprojects_install_pinned_by_the_lock():
    """requirements.txt: the dependencies and the extras `make setup` installs, each pinned
    at the lock's version, and the lock as constraints for what they pull in."""
    project = PYPROJECT["project"]
    wanted = [Requirement(r) for r in project["dependencies"] +
              sum((project["optional-dependencies"][e] for e in setup_extras()), [])]
    pins = locked()
    lines = [line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "-c requirements.lock" in lines
    listed = {}
    for line in lines:
        if not line.startswith("-"):
            req = Requirement(line)
            listed[canonicalize_name(req.name)] = str(req.specifier)
    expected = {canonicalize_name(r.name): f"=={pins[canonicalize_name(r.name)]}"
                for r in wanted}
    assert listed == expected, "requirements.txt should list, after -c requirements.lock:\n" \
        + "\n".join(f"{r.name}=={pins[canonicalize_name(r.name)]}" for r in wanted)


def test_pyyaml_and_psutil_are_core_dependencies():
    names = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    assert {"pyyaml", "psutil"} <= names


def test_make_setup_installs_no_room_and_no_test_tools():
    extras = setup_extras()
    optional = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras) <= set(optional)
    installed = {canonicalize_name(Requirement(r).name)
                 for r in PYPROJECT["project"]["dependencies"] + sum((optional[e] for e in extras), [])}
    assert not installed & {"distributed", "cryptography", "pytest", "playwright"}, installed


def _setup_py():
    """setup.py as a module: its helpers, without running setup()."""
    spec = importlib.util.spec_from_file_location("labkit_setup_py", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_missing_python_headers_name_the_package(tmp_path):
    missing = _setup_py().missing_python_headers
    hint = missing(tmp_path)
    assert hint is not None and "python3-dev" in hint and str(tmp_path) in hint
    assert "\n" not in hint
    assert "python3-dev" in missing(None)
    (tmp_path / "Python.h").write_text("/* the headers */\n")
    assert missing(tmp_path) is None


def test_debian_packages_include_the_python_headers():
    makefile = (REPO / "Makefile").read_text()
    packages = re.search(r"^DEB_PACKAGES\s*:=\s*((?:.*\\\n)*.*)", makefile, re.M).group(1)
    assert "python3-dev" in packages.replace("\\\n", " ").split()
