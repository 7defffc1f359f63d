"""The package's layers (docs/architecture.md): the folder a module is in is its layer
(labkit/core, labkit/experiments, labkit/lab, and above the lab its command line,
labkit/lab/cli), and a module imports only from its own layer and the layers below it. Within the core, the base modules (errors, the argument checks,
where results go, the build table, the struct layouts, the worker's entry point) import
nothing above themselves either. Read from the source with ast, so a function-local import
counts the same as one at the top. The native folders (csrc < cxx < servers) are layers too:
their #include "..." lines go down or stay, round no circle, and inside the C core each file
calls only the ones below it (nm on its object file)."""
import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "labkit"

# Lowest first. The folders are the layers; "base" and "top" are the modules at labkit/.
BASE = {"errors", "core.validate", "core.results", "core.native_build",
        "core.structs", "core._worker_main", "core.procfs"}
# labkit/__init__.py is the public API over the core (measure, catalogue, ...): the
# experiments and the lab may use it, the core may not.
API = {"__init__"}
TOP = {"__main__"}
# The command line (labkit/lab/cli) sits on the lab: nothing of the lab calls it back.
CLI = "lab.cli"
RANKS = {"base": 0, "core": 1, "api": 2, "experiments": 3, "lab": 4, "cli": 5, "top": 6}


def _layer(name: str) -> str:
    """name: a module's path below labkit/ with dots, without .py (core.timing, errors)."""
    if name in BASE:
        return "base"
    if name in API:
        return "api"
    if name in TOP:
        return "top"
    if name == CLI or name.startswith(CLI + "."):
        return "cli"
    head = name.split(".")[0]
    return head if head in ("core", "experiments", "lab") else "?"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyx")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if rel.parts[0] in ("bin", "shipped") or "__pycache__" in rel.parts:
            continue
        if rel.name == "__init__" and len(rel.parts) > 1:
            rel = rel.parent
        yield ".".join(rel.parts), path


def _imported(node) -> set[str]:
    """The labkit modules (as below labkit/, with dots) one import statement names."""
    found = set()
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module == "labkit" or node.module.startswith("labkit."):
            base = node.module.split(".")[1:]
            if base:
                found.add(".".join(base))
            found |= {".".join([*base, a.name]) for a in node.names}
            if not base and any(a.name not in _module_names() for a in node.names):
                found.add("__init__")  # a name of the public API
    elif isinstance(node, ast.Import):
        found |= {a.name.split(".", 1)[1] if "." in a.name else "__init__"
                  for a in node.names if a.name.split(".")[0] == "labkit"}
    return found


def _imports(path: Path) -> set[str]:
    if path.suffix == ".pyx":
        text = path.read_text()
        return {m.replace("labkit.", "", 1) for m in re.findall(r"labkit(?:\.\w+)+", text)} | \
               {f"{pkg}.{m}" for pkg, m in re.findall(r"from labkit\.(\w+) import (\w+)", text)}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        found |= _imported(node)
    # only names that are modules (or packages) of labkit; functions imported from them drop out
    return {n for n in found if n in _module_names()}


@functools.cache
def _module_names() -> set[str]:
    return {name for name, _ in _modules()}


def test_the_flat_package_is_gone():
    flat = sorted(p.name for p in PACKAGE.glob("*.py")
                  if p.stem not in TOP | API | BASE)
    assert not flat, f"put these modules in labkit/core, experiments or lab: {flat}"


def test_every_module_has_a_layer():
    missing = [name for name, _ in _modules() if _layer(name) == "?"]
    assert not missing, f"give these modules a layer (a folder, docs/architecture.md): {missing}"


@pytest.mark.parametrize("name, path", list(_modules()), ids=[n for n, _ in _modules()])
def test_imports_go_down_or_across_never_up(name, path):
    rank = RANKS[_layer(name)]
    up = sorted(m for m in _imports(path) - {name} if RANKS.get(_layer(m), -1) > rank)
    assert not up, (f"labkit.{name} ({_layer(name)}) imports from a higher layer: "
                    + ", ".join(f"{m} ({_layer(m)})" for m in up))


# What every command group of the command line may use of the package besides itself.
CLI_SHARED = {f"{CLI}.command", f"{CLI}.options"}


def _uses_argparse(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "argparse":
            return True
    return False


def test_only_the_command_line_parses_arguments():
    """Options are parsed and refused in labkit/lab/cli alone: the modules below it take
    values and raise ParameterError, which the command line says in its options."""
    parsing = sorted(name for name, path in _modules() if path.suffix == ".py"
                     and _layer(name) != "cli"
                     and _uses_argparse(path))
    assert not parsing, f"argparse outside labkit/lab/cli: {parsing}"


def test_the_cli_layer_holds_the_command_line_package():
    names = {name for name, _ in _modules() if _layer(name) == "cli"}
    assert {CLI, f"{CLI}.main", *CLI_SHARED} <= names
    assert _layer("lab.running.reproduce") == "lab" and _layer("lab.client") == "lab"


def test_each_command_group_stands_alone():
    """A command group's module adds its own options and runs itself: of the command line
    it uses only the Command record and the shared options, never another group; only the
    dispatcher (main) knows them all."""
    groups = {name: path for name, path in _modules()
              if _layer(name) == "cli" and name not in {CLI, f"{CLI}.main", *CLI_SHARED}}
    assert len(groups) >= 5, groups
    crossing = {name: sorted(m for m in _imports(path) if _layer(m) == "cli") for name, path
                in groups.items()}
    crossing = {name: sorted(set(ms) - CLI_SHARED) for name, ms in crossing.items()}
    assert not any(crossing.values()), crossing
    main_imports = _imports(dict(_modules())[f"{CLI}.main"])
    assert set(groups) <= main_imports, set(groups) - main_imports


def _defined(path: Path) -> set[str]:
    """The names a module's top level binds (assignments, defs, classes, imports)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
            # labkit's lazy API table: {name: module}, each name bound on first use.
            if isinstance(node.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id == "_API" for t in targets):
                names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _sources():
    """(where, Python source) of the package, the tests and the notebooks: the jupytext
    .py files and the code cells of the .ipynb ones, shell and magic lines left out."""
    import json

    root = PACKAGE.parent
    for folder in (PACKAGE, root / "tests", root / "notebooks"):
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" not in path.parts and "bin" not in path.relative_to(folder).parts:
                yield str(path.relative_to(root)), path.read_text()
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                lines = "".join(cell["source"]).splitlines()
                yield (f"{path.relative_to(root)} cell {i}",
                       "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!"))))


def test_every_labkit_name_imported_exists():
    """Each module has one name, the one of its layer folder: an import of a name that is not
    there (a module of labkit/core or labkit/lab named as if it sat in labkit/) fails here
    rather than in a learner's notebook."""
    modules = _module_names() | {"__init__"}

    def file_of(module):  # module: below labkit/ with dots, "" for labkit itself
        rel = PACKAGE.joinpath(*module.split(".")) if module else PACKAGE
        return rel / "__init__.py" if rel.is_dir() else rel.with_suffix(".py")

    stale = []
    for where, source in _sources():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.split(".")[0] == "labkit"]
                stale += [f"{where}: import {n}" for n in names
                          if "." in n and n.split(".", 1)[1] not in modules]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] == "labkit":
                module = node.module.partition(".")[2]
                if module and module not in modules:
                    stale.append(f"{where}: from {node.module} import ...")
                elif file_of(module).name == "__init__.py":
                    bound = _defined(file_of(module))
                    stale += [f"{where}: from {node.module} import {a.name}" for a in node.names
                              if a.name not in bound
                              and ".".join(filter(None, [module, a.name])) not in modules]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "labkit":
                if node.attr not in _defined(file_of("")) and node.attr not in modules:
                    stale.append(f"{where}: labkit.{node.attr}")
    assert not stale, "names that are not in labkit:\n" + "\n".join(stale)


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of `graph` (module -> the modules it imports) as a path that ends
    where it starts, or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"lab.report": {"lab.reproduce"}, "lab.reproduce": {"lab.report"}}) \
        == ["lab.report", "lab.reproduce", "lab.report"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_circle():
    """No module imports one that imports it back, directly or through others, counting
    function-local imports too: a circle works only as long as the imports stay in the
    order they happen to be in today."""
    graph = {name: _imports(path) - {name} for name, path in _modules()}
    circle = _cycle(graph)
    assert not circle, "an import circle: " + " -> ".join(circle)


def test_every_public_name_loads():
    """Each name of labkit's lazy API table is defined by the module it names."""
    import labkit

    assert sorted(labkit.__all__) == sorted(labkit._API)
    missing = [n for n in labkit.__all__ if getattr(labkit, n, None) is None]
    assert not missing
    assert set(labkit.__all__) <= set(dir(labkit))
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(labkit, "no_such_name")



# ---- C and C++: the native folders' layers ----

# The native folders, lowest first: the C core, the C++ peers (and the callgrind driver,
# which knows both libraries), the echo servers. An #include "..." names a file of its own
# folder or of a lower one, found from the including file's folder.
C_FOLDERS = ("csrc", "cxx", "servers")
C_SUFFIXES = {".c", ".h", ".cpp", ".hpp"}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _c_includes(root: Path) -> dict[str, set[str]]:
    """{file: the files its #include "..." lines name}, as paths below root (labkit/);
    a name that is no file of the folders stays as written, with "?" before it."""
    graph = {}
    for folder in C_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in C_SUFFIXES:
                continue
            found = set()
            for name in _INCLUDE.findall(path.read_text(errors="replace")):
                target = (path.parent / name).resolve()
                inside = target.is_file() and target.is_relative_to(root.resolve())
                rel = target.relative_to(root.resolve()).as_posix() if inside else ""
                found.add(rel if rel.split("/")[0] in C_FOLDERS else f"?{name}")
            graph[path.relative_to(root).as_posix()] = found
    return graph


def _c_layer_problems(root: Path) -> list[str]:
    """What is wrong with the includes of the native folders under root: an include of no
    file of the folders, one that goes up a layer, a circle."""
    graph = _c_includes(root)
    rank = {folder: i for i, folder in enumerate(C_FOLDERS)}
    problems = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            if target.startswith("?"):
                problems.append(f"{source} includes {target[1:]!r}, no file of "
                                f"{', '.join(C_FOLDERS)} next to it or below")
            elif rank[target.split("/")[0]] > rank[source.split("/")[0]]:
                problems.append(f"{source} includes {target}, a higher layer")
    circle = _cycle({s: {t for t in ts if not t.startswith("?")} for s, ts in graph.items()})
    if circle:
        problems.append("an include circle: " + " -> ".join(circle))
    return problems


def _fake_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for folder in C_FOLDERS:
        (root / folder).mkdir(exist_ok=True)
    return root


def test_the_include_check_refuses_a_circle_an_upward_include_and_a_lost_one(tmp_path):
    fine = _fake_tree(tmp_path / "fine", {
        "csrc/core.h": "#include <stdint.h>\n", "csrc/core.c": '#include "core.h"\n',
        "cxx/peers.h": '#include "../csrc/core.h"\n',
        "servers/s.c": '# include "../cxx/peers.h"\n#include "../csrc/core.h"\n'})
    assert _c_layer_problems(fine) == []
    circle = _fake_tree(tmp_path / "circle", {
        "csrc/a.h": '#include "b.h"\n', "csrc/b.h": '#include "a.h"\n'})
    assert _c_layer_problems(circle) == ["an include circle: csrc/a.h -> csrc/b.h -> csrc/a.h"]
    upward = _fake_tree(tmp_path / "upward", {
        "csrc/count.c": '#include "../cxx/peers.h"\n', "cxx/peers.h": "\n"})
    assert _c_layer_problems(upward) == ["csrc/count.c includes cxx/peers.h, a higher layer"]
    lost = _fake_tree(tmp_path / "lost", {"servers/s.c": '#include "labkit_core.h"\n'})
    assert _c_layer_problems(lost) == [
        "servers/s.c includes 'labkit_core.h', no file of csrc, cxx, servers next to it or below"]


def test_c_includes_go_down_and_round_no_circle():
    """The C core never includes the C++ side, the C++ side never the servers, and no file
    includes itself back through others."""
    graph = _c_includes(PACKAGE)
    assert any(t.startswith("csrc/") for s, ts in graph.items() if s.startswith("cxx/") for t in ts)
    problems = _c_layer_problems(PACKAGE)
    assert not problems, "\n".join(problems)


def _call_order_problems(order: list[str], objects: dict[str, Path]) -> list[str]:
    """Each of `order`'s files (lowest first) calls only labkit functions (lk_*) that a file
    before it defines, as nm reads their object files."""
    import subprocess

    def symbols(obj, *flags):
        out = subprocess.run(["nm", *flags, str(obj)], capture_output=True, text=True,
                             check=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.strip()}

    defines = {src: symbols(objects[src], "--defined-only", "-g") for src in order}
    problems = []
    for i, src in enumerate(order):
        below = set().union(*(defines[s] for s in order[:i]))
        for sym in sorted(s for s in symbols(objects[src], "-u") if s.startswith("lk_")):
            if sym not in below:
                by = [s for s in order if sym in defines[s]]
                problems.append(f"{src} calls {sym}, defined by {by[0] if by else 'none'}")
    return problems


def test_each_c_core_file_calls_only_those_before_it(tmp_path):
    """The C core's sources, in the order native_build lists them (lowest first): what each
    object file needs of labkit's is defined by a file before it, so the stackful server
    can link the stacks alone, and no two files call each other."""
    import shutil
    import subprocess

    from labkit.core import native_build

    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None or shutil.which("nm") is None:
        pytest.skip("needs a C compiler and nm")
    order = [*native_build.CORE_SOURCES, "csrc/frequency.c", *native_build.CHECK_SOURCES]
    objects = {}
    for src in order:
        objects[src] = tmp_path / (Path(src).stem + ".o")
        subprocess.run([cc, "-O2", "-c", "-o", str(objects[src]), str(PACKAGE / src)],
                       check=True)
    problems = _call_order_problems(order, objects)
    assert not problems, "\n".join(problems)
    # The check can fail: the kernel table hands out the copy stack's switch.
    swapped = ["csrc/stack.c", "csrc/kernels.c", "csrc/copy_stack.c"]
    assert _call_order_problems(swapped, objects) == [
        "csrc/kernels.c calls lk_swap_copy_stack, defined by csrc/copy_stack.c"]
