"""Fail when modules under memory/ import each other in a cycle, function-level imports included."""

from __future__ import annotations

import ast
import graphlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "memory"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, name: str, modules: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            # `import memory.a.b` runs memory.a too, but a package's __init__ is not the cycle we look for
            if target in modules and target != name:
                found.add(target)
    return found


def main() -> int:
    files = {module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}
    graph = {name: imports(path, name, set(files)) for name, path in files.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        print("import cycle: " + " -> ".join(error.args[1]))
        return 1
    print(f"no import cycle among {len(files)} modules of {PACKAGE}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
