"""The package's layering (docs/architecture.md): no import cycle, no module importing a layer
above its own, no function-level import of a receval module (the way a cycle is dodged), and
every module placed in a layer, and the forbidden imports (the reports and plots import no
computing module; a comparison's data imports no renderer; a model's scoring imports no family
and no engine that scans its blocks). The layers and the forbidden imports are read from
pyproject.toml's import-linter contracts, which import-linter itself also checks here. Imports
under ``if TYPE_CHECKING:`` count: a type-level circle is a circle."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Callable
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

import receval
from receval.data import io, model_files, segments, tables
from receval.engines.model import ExcludedTruth
from receval.families.contract import NoRecs, Ties

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(receval.__file__).resolve().parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
LAYERS: list[str] = next(c for c in CONFIG["contracts"] if c["type"] == "layers")["layers"]
FORBIDDEN = [c for c in CONFIG["contracts"] if c["type"] == "forbidden"]
# The package root and the modules that only re-export a public name sit above every layer.
TOP = {"receval", "receval.plot", "receval.datasets", "receval._version"}
# Function-level imports that are allowed: torch is optional, its scan imports it on use.
LATE_ALLOWED = {"receval.kernels.model_torch"}


def layer_of(module: str) -> int | None:
    """The index of ``module``'s layer in :data:`LAYERS` (0 is the top), or None."""
    for i, name in enumerate(LAYERS):
        if module == name or module.startswith(name + "."):
            return i
    return None


def graph() -> grimp.ImportGraph:
    return grimp.build_graph("receval", exclude_type_checking_imports=False)


def upward_imports(g: grimp.ImportGraph) -> list[tuple[str, str]]:
    """Direct imports from a module to one in a higher layer."""
    found = []
    for module in sorted(g.modules):
        low = layer_of(module)
        for imported in sorted(g.find_modules_directly_imported_by(module)):
            high = layer_of(imported)
            if low is not None and high is not None and high < low:
                found.append((module, imported))
    return found


def cycles(g: grimp.ImportGraph) -> list[list[str]]:
    """The import graph's strongly connected components of more than one module (Tarjan)."""
    adjacency = {m: sorted(g.find_modules_directly_imported_by(m)) for m in sorted(g.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in adjacency[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in adjacency:
        if v not in index:
            visit(v)
    return found


def test_import_linter_contracts_are_kept() -> None:
    assert lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_imports(graph()) == []


def test_the_import_graph_has_no_cycle() -> None:
    assert cycles(graph()) == []


def test_the_checks_find_a_planted_violation() -> None:
    """The two checks above can fail: an import from the kernels up to the engines is an
    upward import, and one back from the kernels to a module that imports them closes a
    cycle."""
    g = graph()
    g.add_import(importer="receval.kernels.ranking", imported="receval.engines.local")
    assert ("receval.kernels.ranking", "receval.engines.local") in upward_imports(g)
    assert any("receval.kernels.ranking" in c and "receval.engines.local" in c for c in cycles(g))


def forbidden_chains(g: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Import chains, direct or not, from a source module of a forbidden contract to one of
    its forbidden modules (or a module inside one)."""
    found = []
    for contract in FORBIDDEN:
        for source in contract["source_modules"]:
            for target in contract["forbidden_modules"]:
                inside = {m for m in g.modules if m == target or m.startswith(target + ".")}
                for module in sorted(inside):
                    chain = g.find_shortest_chain(importer=source, imported=module)
                    if chain is not None:
                        found.append(tuple(chain))
    return found


def test_forbidden_imports_are_absent() -> None:
    assert FORBIDDEN and forbidden_chains(graph()) == []


def test_the_forbidden_check_finds_a_planted_import() -> None:
    """A plot that imports evaluate, even through another module, breaks the contract."""
    g = graph()
    g.add_import(importer="receval.comparison.text", imported="receval.evaluation")
    assert ("receval.comparison.plots", "receval.comparison.text", "receval.evaluation") in (
        forbidden_chains(g)
    )


# Within the metrics layer (docs/architecture.md): the spec types and the registry sit below
# the grammar and the catalogue of declarations, and only the registry's face imports the
# catalogue (so that importing it registers every metric).
METRICS_BELOW = [
    ("receval.metrics.specs", "receval.metrics.grammar"),
    ("receval.metrics.specs", "receval.metrics.catalogue"),
    ("receval.metrics.grammar", "receval.metrics.catalogue"),
]


@pytest.mark.parametrize(("lower", "upper"), METRICS_BELOW, ids=lambda m: m.rsplit(".", 1)[-1])
def test_the_metric_specs_sit_below_the_grammar_and_the_catalogue(lower: str, upper: str) -> None:
    assert graph().find_shortest_chain(importer=lower, imported=upper) is None


# Within the beyond-accuracy family (docs/architecture.md): what a call's metrics share
# (beyond_context) sits below the item features, those below exposure and fairness, and the
# provider (beyond) above them all; no module imports one above it, directly or not.
BEYOND = [
    "receval.families.beyond_context",
    "receval.families.item_features",
    "receval.families.exposure",
    "receval.families.beyond",
]
BEYOND_BELOW = [(low, high) for i, low in enumerate(BEYOND) for high in BEYOND[i + 1 :]]


@pytest.mark.parametrize(("lower", "upper"), BEYOND_BELOW, ids=lambda m: m.rsplit(".", 1)[-1])
def test_the_beyond_family_modules_import_only_those_below(lower: str, upper: str) -> None:
    assert graph().find_shortest_chain(importer=lower, imported=upper) is None


def test_the_beyond_family_modules_are_all_ordered() -> None:
    """Every module of families/ that the provider imports, directly or not, is one of the
    family's ordered modules or one every family shares (the contract, the states)."""
    g = graph()
    shared = {"receval.families.contract", "receval.families.states"}
    reached = g.find_upstream_modules("receval.families.beyond")
    family = {m for m in reached if m.startswith("receval.families.")}
    assert family - shared == set(BEYOND[:-1])


def test_only_the_registry_imports_the_catalogue() -> None:
    importers = graph().find_modules_that_directly_import("receval.metrics.catalogue")
    assert importers == {"receval.metrics.registry"}


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in graph().modules if layer_of(m) is None and m not in TOP)
    assert unplaced == []


def late_imports(path: Path) -> list[str]:
    """Modules of receval imported inside a function or class of ``path`` (not under
    ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text())
    found = []

    def walk(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            module = (child.module or "") if isinstance(child, ast.ImportFrom) else ""
            if nested and module.split(".")[0] == "receval":
                found.append(module)
            if nested and isinstance(child, ast.Import):
                found.extend(a.name for a in child.names if a.name.split(".")[0] == "receval")
            inner = nested or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            )
            walk(child, inner)

    walk(tree, False)
    return found


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_function_level_import_of_receval(path: Path) -> None:
    late = [m for m in late_imports(path) if m not in LATE_ALLOWED]
    assert late == [], f"{path.relative_to(PACKAGE)}: import {late} at the top of the module"


def test_relative_imports_are_not_used() -> None:
    """Absolute imports name each module's layer where it is imported."""
    relative = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                relative.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert relative == []


# Options parsed once (docs/architecture.md, "Options are parsed once"): below the options
# layer a policy is a member of its enum, never the string the user wrote.
PARSED = {
    "ties": Ties.options(),
    "no_recs": NoRecs.options(),
    "excluded_truth": ExcludedTruth.options(),
}
BELOW_OPTIONS = ("families", "engines", "kernels")


def _names_option(node: ast.expr) -> str | None:
    """The option that ``node`` reads (``ties``, ``prep.ties``, ``spec.no_recs``), or None."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return name if name in PARSED else None


def _strings(node: ast.expr) -> list[str]:
    """The string constants ``node`` is, or holds as a tuple, list or set."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [c.value for c in items if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def option_strings(source: str) -> list[str]:
    """Lines of ``source`` that read a policy as its string: a policy option compared with
    a string (``ties == "first"``, ``no_recs in ("zero", "skip")``), a ties name compared
    with anything (``key == "trec"``), or a mapping keyed by every ties name (a lookup of
    the kernel code by string)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            options = {_names_option(o) for o in operands} - {None}
            texts = {s for o in operands for s in _strings(o)}
            if (options and texts) or texts & set(PARSED["ties"]):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = {s for k in node.keys if k is not None for s in _strings(k)}
            if set(PARSED["ties"]) <= keys:
                found.append(f"{node.lineno}: a mapping keyed by the ties names")
    return found


@pytest.mark.parametrize(
    "path",
    sorted(p for layer in BELOW_OPTIONS for p in (PACKAGE / layer).rglob("*.py")),
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_no_policy_is_read_as_a_string_below_the_options(path: Path) -> None:
    found = option_strings(path.read_text())
    assert found == [], f"{path.relative_to(PACKAGE)} compares a policy as a string: {found}"


@pytest.mark.parametrize(
    "line",
    [
        'ties == "first"',
        'prep.ties != "trec"',
        'ties in ("first", "trec")',
        'spec.no_recs == "zero"',
        'excluded_truth == "raise"',
        '"raise" == no_recs',
        'key == "pessimistic"',
        'POLICY = {"expected": 0, "first": 1, "trec": 2, "optimistic": 3, "pessimistic": 4}',
    ],
)
def test_the_policy_scan_finds_a_planted_string(line: str) -> None:
    assert option_strings(line) != []
    assert option_strings("ties is Ties.FIRST or prep.no_recs is NoRecs.SKIP") == []


# One input layer (docs/architecture.md, "Inputs are read once"): every table is read by
# receval.data (receval.data.tables and the readers it uses; the command line's model and
# segment files, data.model_files and data.segments), the engines call it, and the metric
# families compute from the layout: no module of families/ calls a reader.
READERS = frozenset(
    name
    for module in (tables, io, model_files, segments)
    for name, value in vars(module).items()
    if name.startswith(("read_", "_read_", "load_", "split_samples")) and callable(value)
)


def calls(source: str, matches: Callable[[ast.Call], bool]) -> list[str]:
    """Lines of ``source`` (number and call) with a call that ``matches``."""
    return [
        f"{node.lineno}: {ast.unparse(node)[:80]}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and matches(node)
    ]


def reader_calls(source: str) -> list[str]:
    """Lines of ``source`` that call one of the input layer's readers (by name or attribute)."""

    def is_reader(node: ast.Call) -> bool:
        func = node.func
        return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) in READERS

    return calls(source, is_reader)


@pytest.mark.parametrize("path", sorted((PACKAGE / "families").rglob("*.py")), ids=lambda p: p.name)
def test_no_family_reads_an_input(path: Path) -> None:
    found = reader_calls(path.read_text())
    assert found == [], f"families/{path.name} reads an input itself: {found}"


def test_the_reader_scan_finds_a_planted_call() -> None:
    assert {"read_table", "read_pair", "read_train", "read_items", "split_samples"} <= READERS
    assert {"load_factors", "load_ids", "load_candidates", "read_segment_file"} <= READERS
    assert reader_calls("items = read_items(ctx.items, 'user', 'item', kind)") != []
    assert reader_calls("train = T.read_train(data, 'user', 'item', kind)") != []
    assert reader_calls("items = ctx.items") == []


# The command line reads its data through the input layer too (docs/architecture.md, "Inputs
# are read once"): no module of cli/ calls a data reader of Polars, pandas, PyArrow or NumPy
# itself (cli/config.py reads the text of a config file, the command line's own).
DATA_READERS = {"pl", "polars", "pd", "pandas", "pq", "pa", "pyarrow"}
NUMPY = {"np", "numpy"}


def data_reads(source: str) -> list[str]:
    """Lines of ``source`` that call a data reader directly: ``pl.read_*`` / ``pl.scan_*``
    (and pandas', PyArrow's), ``np.load``."""

    def is_data_read(node: ast.Call) -> bool:
        if not isinstance(node.func, ast.Attribute):
            return False
        owner = ast.unparse(node.func.value).split(".")[0]
        attr = node.func.attr
        return (owner in DATA_READERS and attr.startswith(("read_", "scan_"))) or (
            owner in NUMPY and attr in ("load", "loadtxt", "genfromtxt", "fromfile")
        )

    return calls(source, is_data_read)


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").rglob("*.py")), ids=lambda p: p.name)
def test_the_command_line_reads_no_data_itself(path: Path) -> None:
    found = data_reads(path.read_text())
    assert found == [], f"cli/{path.name} reads a data file itself (use receval.data): {found}"


@pytest.mark.parametrize(
    "line",
    [
        "frame = pl.read_parquet(path)",
        "frame = pl.read_csv(path, separator='\\t')",
        "lazy = pl.scan_parquet(path)",
        "frame = polars.read_ipc(path)",
        "arrays = np.load(source, allow_pickle=False)",
        "arrays = numpy.load(source)",
        "table = pq.read_table(path)",
        "frame = pd.read_csv(path)",
    ],
)
def test_the_data_read_scan_finds_a_planted_call(line: str) -> None:
    assert data_reads(line) != []
    allowed = (
        "table = read_segment_file(path); ids = load_ids(path, '--users')\n"
        "text = source.read_text(encoding='utf-8'); frame.write_parquet(path)"
    )
    assert data_reads(allowed) == []


PROVIDERS = frozenset(
    {
        "ranking_part", "classification_part", "rating_part", "beyond_part",
        "exact_ranking_part", "exact_gauc_part", "exact_rating_part",
    }
)  # fmt: skip


def provider_calls(source: str) -> list[str]:
    """Lines of ``source`` that call a family's provider by name (or through ``PARTS[...]``)."""

    def is_provider(node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Subscript):  # PARTS[family](...) / EXACT_PARTS[family](...)
            func = func.value
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in PROVIDERS or name in ("PARTS", "EXACT_PARTS")

    return calls(source, is_provider)


@pytest.mark.parametrize("path", sorted((PACKAGE / "engines").glob("*.py")), ids=lambda p: p.name)
def test_engines_reach_the_families_through_one_dispatch(path: Path) -> None:
    """Every engine (the model scan too) hands its plan to ``families.providers.family_parts``:
    none calls a family's provider itself."""
    found = provider_calls(path.read_text())
    assert found == [], f"engines/{path.name} calls a family's provider: {found}"


@pytest.mark.parametrize(
    "line",
    ["ranking_part(plan, prep, kernel)", "PARTS[family](chosen, prep)", "F.beyond_part(p, q)"],
)
def test_a_provider_call_is_found(line: str) -> None:
    assert provider_calls(line) != []
