"""The plugin manager: entry-point discovery, broken-plugin isolation and component look-up by name.

Loading is lazy and happens once, on the first look-up. Every entry point of the ``sb3_hir`` group is loaded
on its own (pluggy's ``load_setuptools_entrypoints`` stops at the first failure), so one broken plugin is
reported and skipped while the others load. sb3-hir's own components arrive through the same path, from the
``builtin`` entry point of the ``sb3-hir`` distribution. The manager finds factories by name only; an argument
becomes a component checked against its kind's contract in :mod:`sb3_hir.resolvers`.

Problems stay contained, each reported once as a :class:`PluginWarning` so one bad plugin cannot break the
others:

- a plugin that fails to import, register or run its hooks is skipped (and listed by :meth:`PluginManager.broken`);
- a hook implementation without a spec (a misspelt ``register_*``) would never be called, so a warning names it
  and its plugin; the plugin's other hooks still run;
- a name two plugins register for one kind is a conflict: only look-ups of that exact kind and name raise
  :class:`DuplicateComponentError`, naming every provider; :func:`available` leaves the name out (it cannot be
  created) and :func:`conflicts` lists it, so other names and listings keep working.

Environment variables, read when the manager loads:

- ``SB3_HIR_LOAD_PLUGINS=a,b``: allow-list of plugins (entry-point or distribution names) besides the
  built-in one; set and empty means built-in only. Names no installed plugin has are warned about, as a
  misspelt name would otherwise silently load nothing.
- ``SB3_HIR_BLOCK_PLUGINS=a,b``: block-list, applied after the allow-list (the built-in plugin cannot be
  blocked); the way to settle a conflict. Unknown names are warned about too.
- ``SB3_HIR_STRICT_PLUGINS=1``: raise instead of warning: broken plugins and unknown hooks raise
  :class:`PluginError`, conflicts :class:`DuplicateComponentError`, unknown list entries :class:`PluginError`.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.metadata as importlib_metadata
import os
import re
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from sb3_hir import hookspecs
from sb3_hir._validate import check_choice
from sb3_hir.extras import EXTRAS, has, install_hint
from sb3_hir.hookspecs import HOOKS, PROJECT_NAME

#: The component kinds, in hook order.
KINDS: tuple[str, ...] = tuple(HOOKS)

#: Entry-point group that plugins declare.
ENTRY_POINT_GROUP = PROJECT_NAME

BUILTIN_DISTRIBUTION = "sb3-hir"
BUILTIN_MODULE = "sb3_hir.builtin"

LOAD_ENV = "SB3_HIR_LOAD_PLUGINS"
BLOCK_ENV = "SB3_HIR_BLOCK_PLUGINS"
STRICT_ENV = "SB3_HIR_STRICT_PLUGINS"

#: Components that come with a plugin of this repository (its distribution name) or with an extra of sb3-hir (the
#: top-level module in :data:`sb3_hir.extras.EXTRAS` that brings it): a look-up of one that is not installed then
#: says what to install, not just "unknown". Held equal to the plugins' registrations by tests/cli/test_cli_doors.py.
KNOWN_PROVIDERS: dict[tuple[str, str], str] = {
    ("env", "babyai-goto"): "sb3-hir-minigrid",
    ("expert", "babyai-bot"): "sb3-hir-minigrid",
    ("env", "goalenv"): "sb3-hir-robotics",
    ("env", "pointmaze-instruction"): "sb3-hir-robotics",
    ("goal_spec", "distance-threshold"): "sb3-hir-robotics",
    ("expert", "pointmaze-scripted"): "sb3-hir-robotics",
    ("expert", "fetch-push-scripted"): "sb3-hir-robotics",
    ("relabeler", "final-goal"): "sb3-hir-example",
    ("beta_schedule", "cosine"): "sb3-hir-example",
    ("draw_strategy", "near-future"): "sb3-hir-example",
    ("beta_schedule", "linear"): "imitation",
    ("beta_schedule", "exponential"): "imitation",
}


class PluginError(RuntimeError):
    """A plugin could not be loaded, or its registrations conflict.

    One base class for every plugin failure, so a caller can catch them all with one ``except``.
    """


class UnknownComponentError(PluginError, LookupError):
    """No installed plugin provides the requested name.

    Its message lists the available names and the plugin providing each, so a misspelt name is fixed from the message
    alone.
    """


class DuplicateComponentError(PluginError):
    """Two registrations claim the same name for one kind.

    Raised only by look-ups of the contested name, so one conflict never breaks the other names; block one provider to
    settle it.
    """


class PluginWarning(UserWarning):
    """A plugin failed, conflicts or is misconfigured; the other plugins still load.

    A warning, not an exception, so that one broken plugin never takes the others (or sb3-hir's own components) down;
    ``SB3_HIR_STRICT_PLUGINS=1`` makes it an error.
    """


@dataclass(frozen=True)
class ComponentInfo:
    """What a name resolves to, and which plugin provides it.

    Kept with every name so that listings and error messages can say which plugin (and distribution) provides it: the
    one to block or to report.
    """

    kind: str
    name: str
    factory: Callable[..., Any]
    plugin: str
    distribution: str | None
    version: str | None
    description: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "description": self.description,
            "factory": _qualname(self.factory),
        }


@dataclass(frozen=True)
class PluginInfo:
    """A loaded (or broken) plugin; ``error`` is set when it is broken.

    What ``sb3-hir plugins`` shows, so a user sees which plugin is broken or conflicting without reading tracebacks.

    ``components`` is everything the plugin registers; ``conflicts`` the part of it another plugin registers
    too, which cannot be looked up until one of them is blocked.
    """

    name: str
    distribution: str | None
    version: str | None
    module: str | None
    components: dict[str, tuple[str, ...]] = field(default_factory=dict)
    error: str | None = None
    conflicts: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def broken(self) -> bool:
        return self.error is not None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
        }
        if self.error is None:
            out["components"] = {kind: list(names) for kind, names in self.components.items()}
            if self.conflicts:  # only when there are some, so the usual listing keeps its shape
                out["conflicts"] = {kind: list(names) for kind, names in self.conflicts.items()}
        else:
            out["error"] = self.error
        return out


def _qualname(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{name}" if module else str(name)


def _first_doc_line(obj: Any) -> str:
    doc = getattr(obj, "__doc__", None) or ""
    lines = [line.strip() for line in doc.strip().splitlines()]
    return lines[0] if lines else ""


def normalize_name(name: str) -> str:
    """PEP 503 normalization, so ``sb3_hir_example`` matches ``sb3-hir-example``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _split_list(value: str) -> set[str]:
    return {normalize_name(part) for part in _entries(value)}


def _entries(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _installed(entry_points: Iterable[importlib_metadata.EntryPoint]) -> list[tuple[str, str | None]]:
    pairs = {(ep.name, dist.name if (dist := getattr(ep, "dist", None)) is not None else None) for ep in entry_points}
    return sorted(pairs, key=lambda pair: (pair[0], pair[1] or ""))


def installed_plugins() -> list[tuple[str, str | None]]:
    """``(entry-point name, distribution name)`` of every installed plugin, loaded or not, sorted.

    These are the names ``SB3_HIR_LOAD_PLUGINS``, ``SB3_HIR_BLOCK_PLUGINS`` and ``--sb3-hir-plugins`` accept,
    so a misspelt entry can be reported against them.
    """
    return _installed(importlib_metadata.entry_points(group=ENTRY_POINT_GROUP))


def unknown_plugin_names(value: str, installed: Iterable[tuple[str, str | None]] | None = None) -> list[str]:
    """Entries of the comma-separated ``value`` that name no installed plugin (entry-point or distribution name).

    Used to warn about allow- and block-list entries that match nothing, since a misspelt name would otherwise silently
    load (or block) nothing.

    :param installed: as :func:`installed_plugins` returns; read afresh by default.
    """
    installed = installed_plugins() if installed is None else installed
    known = {normalize_name(name) for pair in installed for name in pair if name}
    return [entry for entry in _entries(value) if normalize_name(entry) not in known]


def describe_installed(installed: Iterable[tuple[str, str | None]] | None = None) -> str:
    """``"builtin (sb3-hir), example (sb3-hir-example)"``: installed plugins for error messages."""
    installed = installed_plugins() if installed is None else installed
    return ", ".join(f"{name} ({dist})" if dist else name for name, dist in installed) or "none"


def provider_hint(kind: str, name: str, installed: Iterable[tuple[str, str | None]] | None = None) -> str:
    """Where ``kind`` ``name`` comes from, for a look-up that found no such name; ``""`` when no known plugin or
    extra provides it.

    A missing plugin or extra is the likeliest cause of an unknown name that the docs use, and the plain "unknown"
    sends the user hunting; a plugin that is installed but not loaded points at the allow- and block-lists instead.

    :param installed: as :func:`installed_plugins` returns; read afresh by default.
    """
    provider = KNOWN_PROVIDERS.get((kind, name))
    if provider is None:
        return ""
    if provider in EXTRAS:
        if has(provider):  # pragma: no cover - then the built-in plugin registers it, unless it is broken
            return ""
        return (f"{kind} {name!r} comes with sb3-hir's {EXTRAS[provider]!r} extra ({provider} is not installed): "
                f"{install_hint(provider)}")
    installed = installed_plugins() if installed is None else installed
    if normalize_name(provider) in {normalize_name(dist) for _, dist in installed if dist}:
        return (f"{kind} {name!r} comes with the {provider} plugin, which is installed but not loaded: see "
                f"{LOAD_ENV} and {BLOCK_ENV}, and sb3-hir plugins for broken plugins")
    return (f"{kind} {name!r} comes with the {provider} plugin, which is not installed: pip install "
            f"plugins/{provider} in a checkout of sb3-hir")


def _provider(info: ComponentInfo) -> str:
    return f"{info.plugin!r} ({info.distribution or 'in-process'})"


def _conflict_message(kind: str, name: str, infos: list[ComponentInfo]) -> str:
    """One line naming every provider of ``kind`` ``name`` and how to keep just one of them."""
    providers = ", ".join(_provider(info) for info in infos)
    keep = next((info for info in infos if info.distribution == BUILTIN_DISTRIBUTION), infos[0])
    block = list(dict.fromkeys(info.distribution for info in infos
                               if info is not keep and info.distribution not in (None, BUILTIN_DISTRIBUTION)))
    if block:
        hint = f"block all but one with {BLOCK_ENV}, e.g. {BLOCK_ENV}={','.join(block)} keeps {keep.plugin!r}"
    else:  # in-process plugins are not subject to the block-list
        hint = f"unregister all but one of them ({BLOCK_ENV} applies to installed plugins only)"
    return f"{kind} {name!r} is registered by {len(infos)} plugins: {providers}; {hint}"


def check_kind(kind: str) -> str:
    """Validate a component kind, naming the accepted ones.

    So that a misspelt kind fails at once with the valid kinds listed, rather than as an empty look-up.
    """
    return check_choice(kind, "kind", KINDS)


class PluginManager:
    """Discovers plugins once and resolves component names.

    The only way components are found by name, for sb3-hir's own built-ins exactly as for third-party plugins, so both
    are looked up, listed and checked the same way.

    :param load_entrypoints: discover plugins from installed entry points; ``False`` gives an empty
        manager for in-process plugins only (tests).
    :param environ: where to read the ``SB3_HIR_*`` variables; defaults to ``os.environ``.
    """

    def __init__(self, load_entrypoints: bool = True, environ: Mapping[str, str] | None = None) -> None:
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self._load_entrypoints = load_entrypoints
        self._environ = os.environ if environ is None else environ
        self._entrypoints_loaded = False
        self._load_error: PluginError | None = None
        self._collected = False
        # plugin name -> (distribution, version, module)
        self._meta: dict[str, tuple[str | None, str | None, str | None]] = {}
        self._broken: dict[str, PluginInfo] = {}
        self._components: dict[str, dict[str, ComponentInfo]] = {kind: {} for kind in KINDS}
        # plugin name -> everything it registered, conflicting names included
        self._registered: dict[str, list[ComponentInfo]] = {}
        self._conflicts: dict[tuple[str, str], list[ComponentInfo]] = {}
        # conflicts already warned about, so re-collecting after register/unregister does not repeat them
        self._warned: set[tuple[str, str, tuple[str, ...]]] = set()
        # what was warned about besides conflicts and broken plugins (unknown hooks, unknown list entries)
        self._notices: list[str] = []

    # -- configuration ---------------------------------------------------------------------------------------
    @property
    def strict(self) -> bool:
        return self._environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}

    def _allowed(self, entry_point: importlib_metadata.EntryPoint, distribution: str | None) -> bool:
        names = {normalize_name(entry_point.name)}
        if distribution:
            names.add(normalize_name(distribution))
        allow = self._environ.get(LOAD_ENV)
        if allow is not None and not names & _split_list(allow):
            return False
        block = self._environ.get(BLOCK_ENV)
        return not (block is not None and names & _split_list(block))

    def _warn(self, message: str, error: type[PluginError] = PluginError, notice: bool = True) -> None:
        """Warn, or raise ``error`` in strict mode: misconfigurations are fatal only when asked for.

        ``notice``: also keep the message for :meth:`notices` (conflicts have their own listing).
        """
        if self.strict:
            raise error(message)
        if notice:
            self._notices.append(message)
        warnings.warn(f"{message}. Set {STRICT_ENV}=1 to raise instead.", PluginWarning, stacklevel=4)

    def _check_lists(self, installed: list[tuple[str, str | None]]) -> None:
        """Warn about list entries naming no installed plugin: a typo would otherwise load or block nothing."""
        for variable in (LOAD_ENV, BLOCK_ENV):
            unknown = unknown_plugin_names(self._environ.get(variable) or "", installed)
            if unknown:
                self._warn(f"{variable} names unknown plugin(s) {', '.join(map(repr, unknown))}; installed "
                           f"plugins: {describe_installed(installed)}")

    def _check_hooks(self, plugin_name: str, plugin: Any, distribution: str | None) -> None:
        """Report hook implementations without a spec: pluggy never calls them, so a misspelt hook is silent.

        ``check_pending`` says whether any registered plugin has one; this plugin's are then read from its hook
        callers, so each plugin is reported once, when it registers.
        """
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            cause: pluggy.PluginValidationError = exc
        else:
            return
        unknown = sorted(
            caller.name for caller in self._pm.get_hookcallers(plugin) or ()
            if not caller.has_spec()
            and any(impl.plugin is plugin and not impl.optionalhook for impl in caller.get_hookimpls())
        )
        if not unknown:
            return
        hints = [f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)
                 for name in unknown for close in [difflib.get_close_matches(name, HOOKS.values(), n=1)]]
        message = (f"sb3-hir plugin {plugin_name!r} ({distribution or 'in-process'}) defines unknown hook(s) "
                   f"{', '.join(hints)}, which are never called; known hooks: {', '.join(HOOKS.values())}")
        if self.strict:
            self._pm.unregister(plugin, name=plugin_name)
            self._meta.pop(plugin_name, None)
            raise PluginError(message) from cause
        self._warn(message)

    # -- loading ---------------------------------------------------------------------------------------------
    def register(self, plugin: Any, name: str | None = None) -> str:
        """Register an in-process plugin (a module or object with hook implementations).

        Registering invalidates the collected components, so the next look-up sees the new plugin. Unknown
        hook names warn (raise :class:`PluginError` in strict mode, leaving the plugin unregistered).
        """
        self._ensure_entrypoints()
        plugin_name = self._pm.register(plugin, name=name)
        if plugin_name is None:  # pragma: no cover - pluggy returns None only for blocked names
            raise PluginError(f"plugin {name!r} is blocked")
        module = getattr(plugin, "__name__", None) or _qualname(type(plugin))
        self._meta[plugin_name] = (None, None, module)
        self._collected = False
        self._check_hooks(plugin_name, plugin, None)
        return plugin_name

    def unregister(self, name: str) -> None:
        """Remove a plugin by name (in-process or installed); its components disappear on the next look-up.

        Entry points are loaded first, so unregistering an installed plugin before any look-up sticks instead of
        the plugin arriving with the first look-up. An unknown name raises :class:`PluginError` listing the
        registered ones: a typo would otherwise leave the plugin in place unnoticed.
        """
        self._ensure_entrypoints()
        if not self._pm.has_plugin(name) and name not in self._broken:
            registered = ", ".join(sorted({n for n, _ in self._pm.list_name_plugin()} | set(self._broken)))
            raise PluginError(f"no plugin named {name!r} is registered; registered: {registered or 'none'}")
        self._pm.unregister(name=name)
        self._meta.pop(name, None)
        self._broken.pop(name, None)
        self._collected = False

    def _fail(self, plugin: str, distribution: str | None, version: str | None, module: str | None,
              exc: BaseException, stage: str) -> None:
        message = f"{stage}: {type(exc).__name__}: {exc}"
        if self.strict:
            raise PluginError(f"sb3-hir plugin {plugin!r} ({distribution or 'in-process'}) failed during "
                              f"{message}") from exc
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        warnings.warn(
            f"sb3-hir plugin {plugin!r} ({distribution or 'in-process'}) is broken and was skipped; "
            f"{stage} raised {detail}. Set {STRICT_ENV}=1 to raise instead.",
            PluginWarning,
            stacklevel=4,
        )
        self._broken[plugin] = PluginInfo(plugin, distribution, version, module, error=message)

    def _ensure_entrypoints(self) -> None:
        """Load the installed plugins once; in strict mode a failure is re-raised by every later call.

        Otherwise a caller that catches the first error (``--help`` listing names, say) would leave a half-loaded
        manager that answers later look-ups as if nothing had failed.
        """
        if self._load_error is not None:
            raise self._load_error
        if self._entrypoints_loaded:
            return
        self._entrypoints_loaded = True
        if not self._load_entrypoints:
            return
        try:
            self._load_installed()
        except PluginError as exc:
            self._load_error = exc
            raise

    def _load_installed(self) -> None:
        entry_points = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
        self._check_lists(_installed(entry_points))
        for entry_point in entry_points:
            dist = getattr(entry_point, "dist", None)
            distribution = dist.name if dist is not None else None
            version = dist.version if dist is not None else None
            builtin = entry_point.value == BUILTIN_MODULE
            if not builtin and not self._allowed(entry_point, distribution):
                continue
            name = entry_point.name
            if self._pm.has_plugin(name) or name in self._broken:
                name = f"{distribution}:{entry_point.name}"
            try:
                module = entry_point.load()
            except Exception as exc:
                self._fail(name, distribution, version, entry_point.value, exc, "import")
                continue
            try:
                self._pm.register(module, name=name)
            except Exception as exc:  # pluggy validates hook names and signatures here
                self._fail(name, distribution, version, entry_point.value, exc, "registration")
                continue
            self._meta[name] = (distribution, version, entry_point.value)
            self._check_hooks(name, module, distribution)

    def _collect(self) -> None:
        self._ensure_entrypoints()
        if self._collected:
            return
        impls: dict[str, list[tuple[str, pluggy.HookImpl]]] = {}
        for kind, hook_name in HOOKS.items():
            for impl in getattr(self._pm.hook, hook_name).get_hookimpls():
                impls.setdefault(impl.plugin_name, []).append((kind, impl))
        registered: dict[str, list[ComponentInfo]] = {}
        claims: dict[tuple[str, str], list[ComponentInfo]] = {}
        for plugin_name, _plugin in self._pm.list_name_plugin():
            if plugin_name in self._broken:
                continue
            distribution, version, module = self._meta.get(plugin_name, (None, None, None))
            staged: list[ComponentInfo] = []
            stage = "hooks"
            try:
                for kind, impl in impls.get(plugin_name, []):
                    stage = HOOKS[kind]
                    register = self._make_register(kind, plugin_name, distribution, version, staged)
                    impl.function(*[register for _ in impl.argnames])
            except Exception as exc:
                self._fail(plugin_name, distribution, version, module, exc, stage)
                continue
            registered[plugin_name] = staged
            for info in staged:
                claims.setdefault((info.kind, info.name), []).append(info)
        components: dict[str, dict[str, ComponentInfo]] = {kind: {} for kind in KINDS}
        conflicts: dict[tuple[str, str], list[ComponentInfo]] = {}
        for (kind, name), infos in sorted(claims.items(), key=lambda item: (KINDS.index(item[0][0]), item[0][1])):
            if len(infos) == 1:
                components[kind][name] = infos[0]
            else:  # the built-in plugin first (it cannot be blocked), then in registration order
                conflicts[(kind, name)] = sorted(infos, key=lambda info: info.distribution != BUILTIN_DISTRIBUTION)
        if self.strict and conflicts:
            (kind, name), infos = next(iter(conflicts.items()))
            raise DuplicateComponentError(_conflict_message(kind, name, infos))
        self._components, self._registered, self._conflicts = components, registered, conflicts
        self._collected = True
        for (kind, name), infos in conflicts.items():
            key = (kind, name, tuple(info.plugin for info in infos))
            if key not in self._warned:
                self._warned.add(key)
                self._warn(f"sb3-hir: {_conflict_message(kind, name, infos)}. Until then looking up {kind} "
                           f"{name!r} raises DuplicateComponentError; its other names still work", notice=False)

    @staticmethod
    def _make_register(kind: str, plugin: str, distribution: str | None, version: str | None,
                       staged: list[ComponentInfo]) -> hookspecs.Register:
        def register(name: str, factory: Any, description: str | None = None) -> None:
            if not isinstance(name, str) or not name.strip() or name != name.strip():
                raise ValueError(f"{kind} name must be a non-empty string without surrounding spaces; got "
                                 f"{name!r}")
            if not callable(factory):
                raise TypeError(f"{kind} {name!r}: factory must be callable; got {factory!r}")
            if any(info.kind == kind and info.name == name for info in staged):
                raise DuplicateComponentError(f"plugin {plugin!r} registers {kind} {name!r} twice")
            staged.append(ComponentInfo(kind, name, factory, plugin, distribution, version,
                                        description or _first_doc_line(factory)))

        return register

    # -- look-ups --------------------------------------------------------------------------------------------
    def available(self, kind: str) -> dict[str, ComponentInfo]:
        """Names of ``kind`` that can be created, with the plugin providing each.

        A name several plugins register is left out, as looking it up raises; :meth:`conflicts` lists it.
        """
        check_kind(kind)
        self._collect()
        return dict(sorted(self._components[kind].items()))

    def conflicts(self) -> dict[tuple[str, str], list[ComponentInfo]]:
        """``(kind, name)`` -> every registration of it, for names more than one plugin registers.

        In hook order, then by name; providers with the built-in plugin first, then in registration order.
        Listings (``sb3-hir plugins``) show these so a conflict is visible before a look-up of it fails.
        """
        self._collect()
        return {key: list(infos) for key, infos in self._conflicts.items()}

    def info(self, kind: str, name: str) -> ComponentInfo:
        """What ``name`` resolves to; raises for unknown names and for names several plugins register."""
        available = self.available(kind)
        if (kind, name) in self._conflicts:
            raise DuplicateComponentError(_conflict_message(kind, name, self._conflicts[(kind, name)]))
        if name not in available:
            listing = ", ".join(f"{n!r} (from {i.plugin})" for n, i in available.items()) or "none installed"
            broken = f"; broken plugins: {', '.join(sorted(self._broken))}" if self._broken else ""
            hint = provider_hint(kind, name)
            raise UnknownComponentError(f"unknown {kind} {name!r}; available: {listing}{broken}"
                                        + (f"; {hint}" if hint else ""))
        return available[name]

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        """The factory registered as ``name``."""
        return self.info(kind, name).factory

    def create(self, kind: str, name: str, **kwargs: Any) -> Any:
        """Build the component registered as ``name`` with ``kwargs``."""
        return self.get(kind, name)(**kwargs)

    def plugins(self) -> list[PluginInfo]:
        """Loaded plugins with their components, then the broken ones with their errors."""
        self._collect()
        loaded = []
        for plugin_name, _plugin in self._pm.list_name_plugin():
            if plugin_name in self._broken:
                continue
            distribution, version, module = self._meta.get(plugin_name, (None, None, None))
            registered = self._registered.get(plugin_name, [])
            components = _names_by_kind(registered)
            conflicts = _names_by_kind(info for info in registered if (info.kind, info.name) in self._conflicts)
            loaded.append(PluginInfo(plugin_name, distribution, version, module, components, conflicts=conflicts))
        return loaded + list(self._broken.values())

    def broken(self) -> list[PluginInfo]:
        self._collect()
        return list(self._broken.values())

    def notices(self) -> list[str]:
        """What loading warned about besides broken plugins and conflicts: hook implementations no spec has (a
        misspelt ``register_*``, never called) and allow- or block-list entries naming no installed plugin.

        Kept, so a listing shows them after whoever loaded the plugins first has silenced the warnings (the CLI's
        ``--help`` text loads them quietly).
        """
        self._collect()
        return list(self._notices)


def _names_by_kind(infos: Iterable[ComponentInfo]) -> dict[str, tuple[str, ...]]:
    """Sorted names per kind, kinds in hook order and only those with names."""
    infos = list(infos)
    by_kind = {kind: tuple(sorted(info.name for info in infos if info.kind == kind)) for kind in KINDS}
    return {kind: names for kind, names in by_kind.items() if names}


_manager: PluginManager | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide manager, created on first use.

    One manager per process, so plugins are discovered, and their problems reported, once.
    """
    global _manager
    if _manager is None:
        _manager = PluginManager()
    return _manager


def reset() -> None:
    """Forget the process-wide manager, so the next look-up rediscovers plugins and re-reads the env vars."""
    global _manager
    _manager = None


@contextlib.contextmanager
def use(manager: PluginManager) -> Iterator[PluginManager]:
    """Make ``manager`` the process-wide manager inside the ``with`` block (tests, isolated sessions).

    So a test or a session can work with its own plugins without changing what the rest of the process sees.
    """
    global _manager
    previous = _manager
    _manager = manager
    try:
        yield manager
    finally:
        _manager = previous


def register(plugin: Any, name: str | None = None) -> str:
    """Register an in-process plugin with the process-wide manager.

    The way to add components without packaging a distribution (notebooks, tests, scripts); they are then looked up
    exactly as installed ones.
    """
    return get_plugin_manager().register(plugin, name=name)


def unregister(name: str) -> None:
    """See :meth:`PluginManager.unregister`.

    Removes an in-process plugin again, to settle a name conflict within a session or undo a test's registration.
    """
    get_plugin_manager().unregister(name)


def available(kind: str) -> dict[str, ComponentInfo]:
    """See :meth:`PluginManager.available`.

    The names a user can pass for ``kind``, with the plugin providing each: what ``--help`` and error messages list.
    """
    return get_plugin_manager().available(kind)


def get(kind: str, name: str) -> Callable[..., Any]:
    """See :meth:`PluginManager.get`.

    The factory itself, for callers that build the component later or with arguments of their own.
    """
    return get_plugin_manager().get(kind, name)


def create(kind: str, name: str, **kwargs: Any) -> Any:
    """See :meth:`PluginManager.create`.

    Builds a component by name in one call, so user code never imports a plugin's module.
    """
    return get_plugin_manager().create(kind, name, **kwargs)


def plugins() -> list[PluginInfo]:
    """See :meth:`PluginManager.plugins`.

    Every plugin, loaded or broken, with its components: what ``sb3-hir plugins`` prints.
    """
    return get_plugin_manager().plugins()


def notices() -> list[str]:
    """See :meth:`PluginManager.notices`.

    The warnings a listing should repeat: a misspelt hook or list entry loads nothing, so it must not go unseen.
    """
    return get_plugin_manager().notices()


def conflicts() -> dict[tuple[str, str], list[ComponentInfo]]:
    """See :meth:`PluginManager.conflicts`.

    The names two plugins claim; only look-ups of those names fail, so this is where to look when one does.
    """
    return get_plugin_manager().conflicts()


def names(kind: str) -> Iterable[str]:
    """Just the names of ``kind``, sorted.

    For listings and parametrized tests, which need the names only.
    """
    return list(available(kind))

