"""Sphinx directives that render the configuration and component references from the code.

Nothing here is retyped: at build time the package is imported, every paper is
loaded (:func:`labeldp_sim.app.load_papers`) and every module of
:mod:`labeldp_sim.papers` imported (some components, the K-class methods and the
user-level families, estimators and randomizers, register only when their
module loads), then

- ``.. labeldp-config-reference::`` walks every config group
  (:func:`~labeldp_sim.harness.conf_path.config_groups`) and each of its options
  (:func:`~labeldp_sim.harness.conf_path.group_options`,
  :func:`~labeldp_sim.harness.conf_path.conf_file`): the YAML's values, and, where
  the YAML names a registered component (its ``name``,
  :func:`~labeldp_sim.harness.components.by_name`), the class and its declared
  ``parameters`` with what each accepts (``constraint.describe()``);
  the experiments are listed per paper (the folder ``conf/<paper>/`` that holds them);
- ``.. labeldp-components::`` lists every registered component of every group
  (:func:`~labeldp_sim.harness.components.components`), including the groups
  no YAML group lists (``kclass.method``, ``userlevel.*``): class, name,
  docstring summary and the parameters table.

The text is reStructuredText, made by plain functions (:func:`config_reference`,
:func:`components_reference`) that ``tests/test_docs.py`` calls without Sphinx.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import yaml

__all__ = ["load_everything", "config_reference", "components_reference", "setup"]


def load_everything() -> None:
    """Load the papers and import every module of :mod:`labeldp_sim.papers`, so every component registers."""
    from labeldp_sim import app
    import labeldp_sim.papers as papers

    app.load_papers()
    for info in pkgutil.walk_packages(papers.__path__, f"{papers.__name__}."):
        importlib.import_module(info.name)


# --- small reStructuredText helpers ---------------------------------------------------------------

def _heading(text: str, char: str) -> list[str]:
    return [text, char * len(text), ""]


def _literal(value) -> str:
    """``value`` as an inline literal (YAML flow style for lists and mappings)."""
    if isinstance(value, (dict, list)):
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False).strip()
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = str(value)
    text = " ".join(text.split())
    if len(text) > 160:
        text = text[:157] + "..."
    return f"``{text}``" if text else "``''``"


def _escape(text: str) -> str:
    """Plain text safe inside a table cell (no markup characters read as markup)."""
    for char in "\\*`|_":
        text = text.replace(char, "\\" + char)
    return " ".join(text.split())


def _table(header: list[str], rows: list[list[str]], widths: list[int] | None = None) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append(f"   :widths: {' '.join(str(w) for w in widths)}")
    lines.append("")
    for row in [header, *rows]:
        for i, cell in enumerate(row):
            lines.append(f"   {'*' if i == 0 else ' '} - {cell or ' '}")
    lines.append("")
    return lines


def _summary(cls: type) -> str:
    """The first paragraph of the class's docstring, on one line."""
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _class_ref(cls: type) -> str:
    return f":py:class:`{cls.__module__}.{cls.__qualname__}`"


def _default(cls: type, key: str) -> str:
    """The constructor's default of ``key``, or "(required)"."""
    try:
        parameter = inspect.signature(cls).parameters.get(key)
    except (TypeError, ValueError):
        parameter = None
    if parameter is not None and parameter.default is not inspect.Parameter.empty:
        return _literal(parameter.default)
    return "(required)"


def _unset(cls: type, key: str) -> str:
    """What a parameter the YAML leaves out gets: the constructor's default, or the caller's value."""
    default = _default(cls, key)
    return "not set (the experiment supplies it)" if default == "(required)" else f"not set (default {default})"


def _parameters(cls: type, values: dict | None = None) -> list[str]:
    """The declared parameters of ``cls`` (and a YAML's values of them) as a table."""
    declared = getattr(cls, "parameters", {}) or {}
    if not declared:
        return ["No declared parameters.", ""]
    header = ["parameter", "accepts", "this YAML" if values is not None else "default"]
    rows = []
    for key, constraint in declared.items():
        row = [f"``{key}``", _escape(constraint.describe())]
        if values is not None:
            row.append(_literal(values[key]) if key in values else _unset(cls, key))
        else:
            row.append(_default(cls, key))
        rows.append(row)
    return _table(header, rows, [20, 55, 25])


# --- the configuration reference -----------------------------------------------------------------

def _read(path: Path) -> dict:
    data = yaml.safe_load(path.read_text()) or {}
    return data if isinstance(data, dict) else {}


def _comment(path: Path) -> str:
    """The YAML's leading comment (what it is), without its ``@package`` line."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text and not text.startswith("@package"):
            lines.append(text)
    return " ".join(lines)


def _flatten(data, prefix: str = "") -> list[tuple[str, object]]:
    """``(dotted key, value)`` of the leaves of a YAML mapping (lists and mappings of components kept whole)."""
    out = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value and "name" not in value and len(dotted.split(".")) < 3:
            out.extend(_flatten(value, f"{dotted}."))
        else:
            out.append((dotted, value))
    return out


def _paper_of(path: Path) -> str:
    """The config folder that holds ``<group>/<option>.yaml``: a paper's name, or ``conf`` (shared)."""
    return path.parent.parent.name


def config_reference() -> str:
    """Every config group, each option with its YAML values and, for a component, its class and parameters."""
    from labeldp_sim.harness import components as comp
    from labeldp_sim.harness import conf_path

    load_everything()
    lines: list[str] = []
    for group in conf_path.config_groups():
        classes = comp.by_name(group)
        options = conf_path.group_options(group)
        lines += [f".. _config-group-{group}:", ""] + _heading(f"Group ``{group}``", "-")
        folders = sorted({str(conf_path.conf_file(group, o).parent.relative_to(conf_path.CONF_DIR.parent))
                          for o in options})
        where = ", ".join(f"``{f}/``" for f in folders)
        lines += [f"{len(options)} options in {where}; pick one with ``{group}=<option>``"
                  + (f"; each names a registered component of group ``{group}``." if classes else "."), ""]
        if group == "experiment":
            lines += _experiments(options)
            continue
        for option in options:
            path = conf_path.conf_file(group, option)
            data = _read(path)
            lines += _heading(f"``{group}={option}``", "~")
            comment = _comment(path)
            if comment:
                lines += [_escape(comment), ""]
            lines += [f"File: ``{path.relative_to(conf_path.CONF_DIR.parent)}``", ""]
            name = data.get("name")
            cls = classes.get(name) if isinstance(name, str) else None
            if cls is not None:
                lines += [f"Class: {_class_ref(cls)} (registered name ``{name}``). {_escape(_summary(cls))}", ""]
                values = {k: v for k, v in data.items() if k not in ("name", "defaults")}
                lines += _parameters(cls, values)
                extra = [k for k in values if k not in (cls.parameters or {})]
                if extra:
                    lines += ["Keys not among the declared parameters: "
                              + ", ".join(f"``{k}``" for k in extra), ""]
            else:
                rows = [[f"``{k}``", _literal(v)] for k, v in _flatten(data) if k != "defaults"]
                lines += _table(["key", "value"], rows, [35, 65]) if rows else ["(empty)", ""]
    return "\n".join(lines) + "\n"


def _experiments(options: list[str]) -> list[str]:
    """The experiments, per paper: name, kind and the YAML's leading comment."""
    from labeldp_sim.harness import conf_path

    by_paper: dict = {}
    for option in options:
        path = conf_path.conf_file("experiment", option)
        by_paper.setdefault(_paper_of(path), []).append((option, path))
    lines = []
    for paper, entries in sorted(by_paper.items()):
        lines += _heading(f"Experiments of ``{paper}`` ({len(entries)})", "~")
        rows = []
        for option, path in entries:
            data = _read(path)
            kind = data.get("kind")
            if kind is None:  # Table I's experiments take kind: rates from conf/table1/table1.yaml
                for entry in data.get("defaults", []) or []:
                    if isinstance(entry, str) and entry.startswith("/"):
                        kind = _read(conf_path.top_config(entry)).get("kind")
            rows.append([f"``{option}``", f"``{kind}``" if kind else "", _escape(_comment(path))])
        lines += _table(["experiment", "kind", "what it runs (the YAML's comment)"], rows, [20, 10, 70])
    return lines


# --- the component reference ---------------------------------------------------------------------

def components_reference() -> str:
    """Every registered component of every group: class, name, docstring summary, declared parameters."""
    from labeldp_sim.harness import components as comp
    from labeldp_sim.harness import conf_path

    load_everything()
    yaml_groups = set(conf_path.config_groups())
    lines: list[str] = []
    for group, table in sorted(comp.components().items()):
        lines += [f".. _component-group-{group}:", ""] + _heading(f"Group ``{group}``", "-")
        if group in yaml_groups:
            lines += [f"Chosen with ``{group}=<name>`` (a YAML of the config group ``{group}``, "
                      f"see :ref:`its options <config-group-{group}>`).", ""]
        else:
            lines += [f"No config group lists these: an experiment's node names them (by ``name``).", ""]
        for path, cls in sorted(table.items(), key=lambda item: item[1].name or item[0]):
            lines += _heading(f"``{cls.name}``: {cls.__qualname__}", "~")
            lines += [f"Class: {_class_ref(cls)}", ""]
            summary = _summary(cls)
            if summary:
                lines += [_escape(summary), ""]
            lines += _parameters(cls)
    return "\n".join(lines) + "\n"


# --- Sphinx --------------------------------------------------------------------------------------

def setup(app):
    from sphinx.util.docutils import SphinxDirective

    def directive(render):
        class Generated(SphinxDirective):
            has_content = False

            def run(self):
                self.env.labeldp_generated = getattr(self.env, "labeldp_generated", set()) | {self.env.docname}
                # fresh title styles: the generated sections nest under the page's own title
                return self.parse_text_to_nodes(render(), allow_section_headings=True)

        return Generated

    def outdated(app, env, added, changed, removed):
        # the generated pages read the code and conf/, not their source: rebuild them on every build
        return sorted(getattr(env, "labeldp_generated", set()) - set(removed))

    def purge(app, env, docname):
        getattr(env, "labeldp_generated", set()).discard(docname)

    app.connect("env-get-outdated", outdated)
    app.connect("env-purge-doc", purge)
    app.add_directive("labeldp-config-reference", directive(config_reference))
    app.add_directive("labeldp-components", directive(components_reference))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
