"""DESIGN.md's one rule: imports point down, and nothing below the Airflow shell imports airflow.

``protocol`` <- ``client``, ``storage`` <- ``writer`` (the Source writer) <- ``sync``,
``publish`` <- the shell (hooks <- lineage, shell <- triggers <- sensors, operators; the
command line and the demos on top); what is above the writer uses
its face (``airflow_provider_resourcesync.writer``), never a module of it. ``errors`` is a leaf
every layer may use; ``workdirs`` (work folders of one process) a leaf the layers doing I/O may
use, itself using ``errors`` only; ``units`` (amounts as log lines show them) a leaf of no
imports that the engines (sync, publish) may use; ``cores`` (the cores a process may use, and
those idle) a leaf of no imports for client and sync."""

from __future__ import annotations

import ast
from pathlib import Path

import airflow_provider_resourcesync

PACKAGE = "airflow_provider_resourcesync"

# Layer -> the package's own modules it may import; third-party packages it must not.
ALLOWED = {
    "protocol": {"protocol", "errors"},
    "client": {"protocol", "client", "errors", "workdirs", "cores"},
    "storage": {"protocol", "storage", "errors", "workdirs"},
    "writer": {"protocol", "storage", "writer", "errors", "workdirs"},
    "sync": {"protocol", "client", "storage", "writer", "sync", "errors", "workdirs", "units",
             "cores"},
    "publish": {"protocol", "client", "storage", "writer", "publish", "errors", "workdirs",
                "units"},
    "testing": {"protocol", "testing", "errors"},
    "workdirs": {"errors"},
    "units": set(),
    "cores": set(),
    # every Airflow name, on every supported release (issue 30); runs read back
    "compat": {"errors"},
    "run_records": {"compat"},
    # the Airflow shell (issue 29, item 7): hooks <- lineage, shell <- triggers <- sensors,
    # operators; the command line and the demos on top
    "hooks": {"protocol", "client", "storage", "publish", "errors", "hooks", "compat",
              "get_provider_info"},  # the connection form, for Airflow before 3.2
    "lineage": {"hooks", "errors", "lineage", "lineage_facets"},
    "lineage_facets": set(),  # imported only where OpenLineage asks for facets
    "shell": {"protocol", "client", "storage", "writer", "sync", "hooks", "errors", "shell",
              "compat"},
    "triggers": {"protocol", "client", "hooks", "shell", "errors", "triggers", "compat"},
    "sensors": {"protocol", "client", "storage", "writer", "sync", "hooks", "shell", "triggers",
                "errors", "sensors", "compat"},
    "operators": {"protocol", "client", "storage", "writer", "sync", "publish", "hooks",
                  "lineage", "shell", "errors", "units", "operators", "compat"},
    "cli": {"", "protocol", "client", "errors"},  # "": the package's version
    "get_provider_info": {""},
    "example_dags": set(),
    "demo_report": {"storage", "run_records"},
    "demo": {"storage", "testing", "example_dags", "demo_report", "run_records"},
    "demo_publish": {"storage", "testing", "example_dags", "demo_report", "demo", "run_records"},
}
FORBIDDEN = {
    "protocol": {"airflow", "httpx", "boto3", "botocore", "smart_open", "requests"},
    "client": {"airflow", "boto3", "botocore", "smart_open"},
    "storage": {"airflow", "httpx"},
    "writer": {"airflow", "httpx", "boto3", "botocore", "smart_open", "requests"},
    "sync": {"airflow"},
    "publish": {"airflow"},
    "testing": {"airflow", "httpx", "boto3"},
    "workdirs": {"airflow", "httpx", "boto3", "botocore", "smart_open", "requests"},
    "units": {"airflow", "httpx", "boto3", "botocore", "smart_open", "requests"},
    "cores": {"airflow", "httpx", "boto3", "botocore", "smart_open", "requests"},
    **dict.fromkeys(["hooks", "lineage", "lineage_facets", "shell", "triggers", "sensors",
                     "operators", "cli", "get_provider_info", "example_dags", "demo_report",
                     "demo", "demo_publish", "compat", "run_records"], frozenset({"requests"})),
}


def violations(package_dir: Path) -> list[str]:
    """Every import in a layer that breaks the rule, as ``file:line: import``."""
    found = []
    for layer, allowed in ALLOWED.items():
        module = package_dir / f"{layer}.py"  # a leaf module, or a package
        for path in [module] if module.is_file() else sorted((package_dir / layer).rglob("*.py")):
            for line, module in _imports(path):
                top, _, rest = module.partition(".")
                own = rest.partition(".")[0] if top == PACKAGE else None
                if (own is not None and own not in allowed) or top in FORBIDDEN[layer]:
                    found.append(f"{path.relative_to(package_dir)}:{line}: {module}")
    return found


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    modules = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the file's own package
                package = [PACKAGE, *_package_parts(path)]
                base = package[: len(package) - node.level + 1]
                modules.append((node.lineno, ".".join(filter(None, [*base, node.module]))))
            else:
                modules.append((node.lineno, node.module or ""))
    return modules


def _package_parts(path: Path) -> list[str]:
    parts = path.parts
    return list(parts[parts.index(PACKAGE) + 1 : -1])


def test_the_package_keeps_the_layering_rule() -> None:
    assert violations(Path(airflow_provider_resourcesync.__file__).parent) == []


def test_every_module_is_in_a_layer() -> None:
    """A new module or package must be given its place in :data:`ALLOWED` first."""
    package_dir = Path(airflow_provider_resourcesync.__file__).parent
    tops = {path.relative_to(package_dir).parts[0].removesuffix(".py")
            for path in package_dir.rglob("*.py")}
    assert tops - {"__init__", "errors"} - set(ALLOWED) == set()  # errors: the leaf of all


def behind_the_face(package_dir: Path, layer: str) -> list[str]:
    """Every import of a module inside ``layer`` from outside it, as ``file:line: import``."""
    inside = f"{PACKAGE}.{layer}."
    return [f"{path.relative_to(package_dir)}:{line}: {module}"
            for path in sorted(package_dir.rglob("*.py"))
            if path.parent != package_dir / layer
            for line, module in _imports(path) if module.startswith(inside)]


#: Where Airflow keeps names its releases moved (``airflow.sdk`` is 3.x, and ``BaseHook`` and
#: ``conf`` came to it in 3.1 and 3.2): imported by :mod:`compat` only (issue 30).
MOVED = ("airflow.sdk", "airflow.triggers", "airflow.configuration", "airflow.hooks",
         "airflow.models", "airflow.sensors", "airflow.datasets", "airflow.decorators")


def moved_imports(package_dir: Path) -> list[str]:
    """Every import of :data:`MOVED` outside ``compat.py`` and ``run_records.py`` (which reads
    the models of each release), as ``file:line: import``."""
    return [f"{path.relative_to(package_dir)}:{line}: {module}"
            for path in sorted(package_dir.rglob("*.py"))
            if path.name not in {"compat.py", "run_records.py"}
            for line, module in _imports(path)
            if module.startswith(MOVED) and module.partition(".")[0] == "airflow"]


def test_airflow_names_come_through_compat() -> None:
    assert moved_imports(Path(airflow_provider_resourcesync.__file__).parent) == []


def test_the_compat_check_catches_a_moved_name(tmp_path: Path) -> None:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "bad.py").write_text("from airflow.sdk import BaseHook\n"
                                               "from airflow.providers.amazon import aws\n")
    assert moved_imports(tmp_path) == ["hooks/bad.py:1: airflow.sdk"]


def test_the_writer_is_used_through_its_face() -> None:
    """The Source writer is a layer of its own (issue 26): the engines and the shell import
    ``writer``, never ``writer.source_writer`` or ``writer.records``."""
    assert behind_the_face(Path(airflow_provider_resourcesync.__file__).parent, "writer") == []


def test_the_check_catches_upward_and_airflow_imports(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "protocol").mkdir(parents=True)
    (package / "client").mkdir()
    (package / "protocol" / "bad.py").write_text(
        "import httpx\nfrom airflow_provider_resourcesync.client import x\n")
    (package / "client" / "worse.py").write_text(
        "from airflow.sdk import BaseHook\nfrom ..protocol import model\n"
        "from ..sync import engine\n")
    (package / "workdirs.py").write_text(
        "from .errors import DestinationError\nfrom .storage import base\n")
    assert violations(package) == [
        "protocol/bad.py:1: httpx",
        "protocol/bad.py:2: airflow_provider_resourcesync.client",
        "client/worse.py:1: airflow.sdk",
        "client/worse.py:3: airflow_provider_resourcesync.sync",
        "workdirs.py:2: airflow_provider_resourcesync.storage",
    ]
