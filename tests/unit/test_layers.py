"""Architecture check: perfci's layers (DESIGN.md) import downwards only."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2] / "perfci"

# lowest first; a module may import from its own layer or any lower one
# fmt: off
LAYERS: dict[str, int] = {
    "errors": 1, "model": 1, "schema": 1, "schemas": 1, "patterns": 1, "config": 1, "cpus": 1,
    "stats": 2,
    "profilers": 3, "workloads": 3, "metrics": 3,
    "case_session": 4, "lockstep": 4, "worker": 4, "supervisor": 4, "runner": 4,
    "store": 5, "compare": 5, "importers": 5,
    "reports": 6,
    "cli": 7, "__main__": 7, "__init__": 7,
}
# fmt: on


def _layer(module: str) -> int:
    top = module.split(".")[1] if module.startswith("perfci.") else module
    return LAYERS[top]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfci."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("perfci.")}
    return found


def test_every_top_level_module_has_a_layer() -> None:
    names = {
        p.stem if p.is_file() else p.name
        for p in ROOT.iterdir()
        if not p.name.startswith(("_", ".")) or p.name in ("__init__.py", "__main__.py")
    }
    names = {n for n in names if n not in ("py", "__pycache__")} - {"py.typed"}
    missing = {n.removesuffix(".typed") for n in names} - set(LAYERS) - {"py"}
    assert not missing, f"add these modules to LAYERS: {sorted(missing)}"


def test_imports_point_downwards() -> None:
    violations = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(rel.parts)
        if module == "perfci.__init__" or module == "perfci.__main__":
            continue
        own = _layer(module)
        for imported in _imports(path):
            if _layer(imported) > own:
                violations.append(f"{module} (layer {own}) imports {imported} (layer {_layer(imported)})")
    assert not violations, "\n".join(sorted(violations))
