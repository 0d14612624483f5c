"""scripts/check_sizes.py and scripts/check_layers.py on small trees made for the purpose: each
fails on what it must catch and passes what is allowed (stdlib only, run by CTest)."""
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import check_sizes  # noqa: E402


def write(root: pathlib.Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def run(script: str, root: pathlib.Path):
    return subprocess.run([sys.executable, str(SCRIPTS / script), "--root", str(root)],
                          capture_output=True, text=True)


def long_cxx_function(name: str, body_lines: int) -> str:
    return f"int {name}(int x) {{\n" + "  x += 1;\n" * body_lines + "  return x;\n}\n"


class CxxScanTest(unittest.TestCase):
    def test_finds_each_kind_of_definition_with_its_lines(self):
        source = textwrap.dedent('''\
            #define BRACE {
            namespace a {
            struct alignas(64) Ring {
              int head_{0};
              int size() const { return 1; }
            };
            Foo::Foo(int x) : a_(x), b_{x} {
              const char* s = "}{";  // }
            }
            extern "C" {
            int c_entry(void) {
              auto f = [] { return 2; };
              return f();
            }
            }
            int table[] = {1, 2};
            }  // namespace a
            ''')
        found = {name: (first, last) for name, first, last in check_sizes.cxx_functions(source)}
        self.assertEqual(found, {"size": (5, 5), "Foo::Foo": (7, 9), "c_entry": (11, 14)})

    def test_python_functions_by_ast(self):
        found = check_sizes.python_functions("class A:\n    def f(self):\n        return 1\n", "x.py")
        self.assertEqual(found, [("A.f", 2, 3)])


class CheckSizesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        write(self.root, "scripts/size_exceptions.txt", "# none\n")

    def tearDown(self):
        self.tmp.cleanup()

    def test_passes_within_the_limits(self):
        write(self.root, "runtime/src/a.cpp", long_cxx_function("short_one", 90))
        self.assertEqual(run("check_sizes.py", self.root).returncode, 0)

    def test_fails_on_a_long_function_and_names_it(self):
        write(self.root, "runtime/src/a.cpp", long_cxx_function("long_one", 120))
        result = run("check_sizes.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("runtime/src/a.cpp:long_one", result.stdout)

    def test_fails_on_a_long_file_and_a_long_python_function(self):
        write(self.root, "cli/b.cpp", "int x;\n" * 401)
        write(self.root, "python/straggler_probe/c.py", "def f():\n" + "    pass\n" * 101)
        result = run("check_sizes.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cli/b.cpp ", result.stdout)
        self.assertIn("python/straggler_probe/c.py:f", result.stdout)

    def test_a_stated_exception_passes_and_a_stale_one_fails(self):
        write(self.root, "runtime/src/a.cpp", long_cxx_function("long_one", 120))
        write(self.root, "scripts/size_exceptions.txt",
              "runtime/src/a.cpp:long_one  one table, one job\n")
        self.assertEqual(run("check_sizes.py", self.root).returncode, 0)
        write(self.root, "runtime/src/a.cpp", long_cxx_function("long_one", 10))
        result = run("check_sizes.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("stale exception", result.stdout)

    def test_tests_are_reported_not_failed(self):
        write(self.root, "tests/x/a_test.cpp", long_cxx_function("long_test", 150))
        self.assertEqual(run("check_sizes.py", self.root).returncode, 0)


LAYERS = """\
## Layers
```
layer 2: cli
layer 1: online
layer 0: runtime
```
"""


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        write(self.root, "docs/ARCHITECTURE.md", LAYERS)
        write(self.root, "runtime/CMakeLists.txt",
              "target_include_directories(r PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)\n")
        write(self.root, "online/CMakeLists.txt",
              "target_include_directories(o PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include\n"
              "  PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)\n")
        write(self.root, "runtime/include/sp/probe.h", "#pragma once\n")
        write(self.root, "online/include/sp/online.h", '#include "sp/probe.h"\n')
        write(self.root, "online/src/model.cpp", '#include "sp/online.h"\n#include "model.h"\n')
        write(self.root, "online/src/model.h", "#pragma once\n")
        write(self.root, "cli/main.cpp", '#include "sp/online.h"\n#include "sp/probe.h"\n')

    def tearDown(self):
        self.tmp.cleanup()

    def test_downward_includes_pass(self):
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 0, result.stdout)

    def test_an_upward_include_fails_as_a_cycle_too(self):
        write(self.root, "runtime/src/bad.cpp", '#include "sp/online.h"\n')
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("runtime (layer 0) includes online (layer 1): upward", result.stdout)
        self.assertIn("cycle: online -> runtime -> online", result.stdout)

    def test_an_unresolved_include_and_an_unlayered_folder_fail(self):
        write(self.root, "cli/other.cpp", '#include "nowhere.h"\n')
        write(self.root, "extra/x.cpp", "int x;\n")
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn('#include "nowhere.h" is found in no include directory', result.stdout)
        self.assertIn("extra/x.cpp: its folder is in no layer", result.stdout)

    def test_a_same_layer_include_fails(self):
        write(self.root, "docs/ARCHITECTURE.md", LAYERS.replace("layer 2: cli", "layer 1: cli"))
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cli (layer 1) includes online (layer 1): same layer", result.stdout)

    def test_sub_layers_order_the_folders_of_one_top_folder(self):
        write(self.root, "docs/ARCHITECTURE.md", LAYERS.replace(
            "layer 1: online\n", "layer 1: online\nlayer 1.1: online/src/b\nlayer 1.0: online/src/a\n"))
        write(self.root, "online/src/a/a.h", "#pragma once\n")
        write(self.root, "online/src/b/b.cpp", '#include "a/a.h"\n#include "sp/probe.h"\n')
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 0, result.stdout)
        write(self.root, "online/src/a/a.cpp", '#include "b/b.h"\n')
        write(self.root, "online/src/b/b.h", "#pragma once\n")
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("online/src/a (layer 1.0) includes online/src/b (layer 1.1): upward", result.stdout)
        self.assertIn("cycle: online/src/a -> online/src/b -> online/src/a", result.stdout)

    def test_a_sub_layer_is_of_its_top_layer_to_other_folders(self):
        write(self.root, "docs/ARCHITECTURE.md", LAYERS.replace(
            "layer 1: online\n", "layer 1: online cli_helpers\nlayer 1.5: online/src/b\n"))
        write(self.root, "cli_helpers/h.h", "#pragma once\n")
        write(self.root, "online/src/b/b.cpp", '#include "../../../cli_helpers/h.h"\n')
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("online/src/b (layer 1.5) includes cli_helpers (layer 1): same layer", result.stdout)

    def test_a_folder_over_the_flat_limit_fails_unless_excepted(self):
        for i in range(21):
            write(self.root, f"online/src/unit_{i}.cpp", "int x;\n")
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("online/src holds 23 C++ files flat, over 20", result.stdout)
        write(self.root, "scripts/flat_exceptions.txt", "# why\nonline/src  until it is split\n")
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("online/src holds 23 C++ files flat (over 20; excepted: until it is split)",
                      result.stdout)

    def test_a_stale_flat_exception_fails(self):
        write(self.root, "scripts/flat_exceptions.txt", "online/src  until it is split\n")
        result = run("check_layers.py", self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("online/src holds 2 C++ files flat, within 20: a stale exception", result.stdout)


class GenSettingsTest(unittest.TestCase):
    TABLE = """\
        import dataclasses
        from typing import Any, Callable

        @dataclasses.dataclass(frozen=True)
        class Setting:
            name: str
            parse: Callable[[str], Any]
            default: Any
            doc: str
            keyword: bool = True
            shown: str | None = None
            cpp: str | None = None
            cpp_unset: Any = None
            formerly: str | None = None

        SETTINGS = (
            Setting("max_lag", int, {max_lag}, doc="Steps rank 0 may lag.", cpp="kMaxLag"),
            Setting("metrics_file", str, None, doc="A file.", shown="(none)", cpp="kMetricsFile",
                    cpp_unset=""),
            Setting("fault", str, "none", doc="Test hook.", keyword=False),
            Setting("recap_interval", int, 50, doc="Recap.", formerly="summary_interval"),
        )
        """

    def make_tree(self, root: pathlib.Path, max_lag: int) -> None:
        write(root, "python/straggler_probe/_settings_table.py", self.TABLE.format(max_lag=max_lag))
        write(root, "docs/CONFIG.md", """\
            # Configuration
            <!-- settings-table: begin. Generated by scripts/gen_settings.py from python/straggler_probe/_settings_table.py: edit the table there. -->
            <!-- settings-table: end -->
            After.
            """)

    def test_writes_then_checks_then_catches_a_changed_default(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            self.make_tree(root, 8)
            self.assertEqual(run_check(root).returncode, 1)  # nothing generated yet
            subprocess.run([sys.executable, str(SCRIPTS / "gen_settings.py"), "--root", tmp],
                           check=True, capture_output=True)
            self.assertEqual(run_check(root).returncode, 0)
            header = (root / "online/include/straggler_probe/online/setting_defaults.h").read_text()
            self.assertIn("inline constexpr int kMaxLag = 8;", header)
            self.assertIn('inline constexpr char kMetricsFile[] = "";', header)
            doc = (root / "docs/CONFIG.md").read_text()
            self.assertIn("| `STRAGGLER_PROBE_MAX_LAG` | `max_lag=` | 8 | Steps rank 0 may lag. |", doc)
            self.assertIn("| `STRAGGLER_PROBE_FAULT` | (environment only) | none |", doc)
            self.assertIn("| (none) |", doc)
            self.assertIn("| Recap. Formerly `STRAGGLER_PROBE_SUMMARY_INTERVAL` / `summary_interval=`: "
                          "still read until the next release, with a warning. |", doc)
            self.assertTrue(doc.endswith("After.\n"))
            # A default changed in the table and not regenerated: both files are stale.
            write(root, "python/straggler_probe/_settings_table.py",
                  self.TABLE.format(max_lag=9))
            stale = run_check(root)
            self.assertEqual(stale.returncode, 1)
            self.assertIn("setting_defaults.h", stale.stdout)
            self.assertIn("CONFIG.md", stale.stdout)


def run_check(root: pathlib.Path):
    return subprocess.run([sys.executable, str(SCRIPTS / "gen_settings.py"), "--check",
                           "--root", str(root)], capture_output=True, text=True)


if __name__ == "__main__":
    unittest.main()
