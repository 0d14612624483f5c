"""Configuration: keyword arguments of init() over STRAGGLER_PROBE_* environment variables over defaults.

A wrong value is one ConfigError naming the variable (or keyword) and what it accepts: nothing is
guessed, so a typo in a job script cannot silently turn a feature off.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

from ._settings_table import SETTINGS, Setting

ENV_PREFIX = "STRAGGLER_PROBE_"


class ConfigError(ValueError):
    """A configuration value straggler_probe cannot use; the message names it."""


# Built from the settings table (_settings_table.py): one default and one check per setting.
SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
KEYWORDS: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.keyword)
# Former names (a row's `formerly`), read for one release: the old name -> the row.
FORMER_NAMES: dict[str, Setting] = {s.formerly: s for s in SETTINGS if s.formerly}


# The resolved configuration: one attribute per row of the table, its default the table's.
Config = dataclasses.make_dataclass(
    "Config",
    [(s.name, type(s.default) if s.default is not None else Any,
      dataclasses.field(default=s.default)) for s in SETTINGS])
Config.__module__ = __name__  # make_dataclass's module= needs Python 3.12
Config.__doc__ = "The resolved settings, one attribute per row of _settings_table.SETTINGS."


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def load_config(kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """Build the configuration; raises ConfigError on an unknown keyword or a malformed value."""
    environ = os.environ if environ is None else environ
    former_keywords = {old for old, s in FORMER_NAMES.items() if s.keyword}
    unknown = sorted(set(kwargs) - set(KEYWORDS) - former_keywords)
    if unknown:
        raise ConfigError(f"straggler_probe.init(): unknown keyword argument(s) {', '.join(unknown)}; "
                          f"known: {', '.join(KEYWORDS)}")
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        # The current name first, then the former one: keyword over environment for each.
        for name in (setting.name, setting.formerly):
            if name is None:
                continue
            if setting.keyword and name in kwargs and kwargs[name] is not None:
                values[setting.name] = _from_kwarg(name, setting, kwargs[name])
                break
            raw = environ.get(env_name(name))
            if raw is not None:
                try:
                    values[setting.name] = setting.parse(raw)
                except ValueError as err:
                    raise ConfigError(f"{env_name(name)}={raw!r} is invalid: {err}") from None
                break
        else:
            values[setting.name] = setting.default
    return Config(**values)


def former_names_used(kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per setting given under its former name (still read for one release)."""
    environ = os.environ if environ is None else environ
    out = []
    for old, setting in FORMER_NAMES.items():
        given_old = []
        if kwargs.get(old) is not None:
            given_old.append(f"{old}=")
        if env_name(old) in environ:
            given_old.append(env_name(old))
        if not given_old:
            continue
        new_set = (setting.keyword and kwargs.get(setting.name) is not None) or \
            env_name(setting.name) in environ
        note = (f"; ignored, since {setting.name} is given too" if new_set
                else "; the old name is read until the next release")
        out.append(f"{' and '.join(given_old)} is now {setting.name}= / "
                   f"{env_name(setting.name)}{note}")
    return out


def _from_kwarg(name: str, field: Setting, value: Any) -> Any:
    # Keywords go through the same parser as the environment, so both accept the same values.
    text = str(int(value)) if isinstance(value, bool) else str(value)
    try:
        return field.parse(text)
    except ValueError as err:
        raise ConfigError(f"straggler_probe.init({name}={value!r}) is invalid: {err}") from None


# Variables other components of straggler_probe read themselves (the runtime, the analysis):
# prefixes, so that their sections of docs/CONFIG.md can grow without touching this file.
_FOREIGN_ENV_PREFIXES = ("LOG", "VERBOSE", "RING", "MAX_THREADS", "MAX_EVENTS", "QUEUE",
                         "STEP_GRACE", "STEP_MARKER", "STEP_NVTX", "DRAIN", "CUPTI", "NCCL", "PRELOAD", "PYTHON",
                         "LIB", "HEATMAP", "REPORT", "JSONL", "ONLINE", "CLI")


def unknown_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """STRAGGLER_PROBE_* variables nobody reads: a misspelling would otherwise go unnoticed."""
    environ = os.environ if environ is None else environ
    known = {env_name(s.name) for s in SETTINGS} | {env_name(old) for old in FORMER_NAMES}
    return sorted(k for k in environ
                  if k.startswith(ENV_PREFIX) and k not in known
                  and not k[len(ENV_PREFIX):].startswith(_FOREIGN_ENV_PREFIXES))
