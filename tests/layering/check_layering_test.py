"""Tests check_layering.py against small fixture trees with a layer table of their own."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_layering.py")
PROJECT = os.path.dirname(os.path.dirname(HERE))

TABLE = """\
# Fixture architecture

Some prose, and a table that is not the layer table:

| folder | what |
|---|---|
| sim/ | core |

| layer | folder | may include |
|---|---|---|
| sim | sim/ | — |
| models | models/ | sim/ |
| kernels | kernels/ | sim/units.h, sim/dtype.h |
| tests | tests/ | * |

Text after the table.
"""

CLEAN = {
    "sim/units.h": "#pragma once\n#include <cstdint>\n",
    "sim/engine.h": '#pragma once\n#include "sim/units.h"\n#include "sim/collectives/plan.h"\n',
    "sim/collectives/plan.h": '#pragma once\n#include "sim/units.h"\n',
    "models/lowering.h": '#pragma once\n#include "sim/engine.h"\n#include "models/cost_model.h"\n',
    "models/cost_model.h": '#pragma once\n#include "sim/collectives/plan.h"\n',
    "kernels/gemm.cu": '#include "sim/units.h"\n#include "kernels/gemm.cuh"\n',
    "kernels/gemm.cuh": '#pragma once\n#include "sim/dtype.h"\n',
    "tests/lowering_test.cc": '#include "models/lowering.h"\n#include "kernels/gemm.cuh"\n'
                              '#include "tests/helpers.h"\n',
    "tests/helpers.h": "#pragma once\n",
    "README.md": '#include "anything.h" in a file that is not a source file\n',
}


class CheckLayeringTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.root = self._tmp.name
        self.table = os.path.join(self.root, "architecture.md")
        self.write_tree(CLEAN)
        self.write("architecture.md", TABLE)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)

    def write_tree(self, files):
        for path, text in files.items():
            self.write(path, text)

    def check(self, table=None, root=None):
        result = subprocess.run(
            [sys.executable, "-B", CHECKER, "--root", root or self.root, "--table", table or self.table],
            capture_output=True, text=True)
        return result.returncode, result.stdout, result.stderr

    def assert_clean(self):
        code, out, err = self.check()
        self.assertEqual(code, 0, out + err)
        self.assertIn("OK", out)
        self.assertEqual(out.count("\n"), 1, out)  # only the summary line

    def assert_violation(self, expected_line):
        code, out, err = self.check()
        self.assertEqual(code, 1, out + err)
        self.assertIn(expected_line, out.splitlines())

    def test_clean_tree_passes(self):
        self.assert_clean()

    def test_forbidden_folder_include_fails(self):
        self.write("sim/engine.h", '#pragma once\n#include "sim/units.h"\n#include "models/lowering.h"\n')
        self.assert_violation('sim/engine.h:3: sim may not include "models/lowering.h" (allowed: sim/)')

    def test_violation_lines_and_summary(self):
        self.write("models/bad.cc", '#include "kernels/gemm.cuh"\n\n#include "tests/helpers.h"\n')
        code, out, _ = self.check()
        self.assertEqual(code, 1)
        lines = out.splitlines()
        self.assertEqual(lines[:2], [
            'models/bad.cc:1: models may not include "kernels/gemm.cuh" (allowed: models/, sim/)',
            'models/bad.cc:3: models may not include "tests/helpers.h" (allowed: models/, sim/)',
        ])
        self.assertEqual(len(lines), 3)
        self.assertIn("2 forbidden include(s) in 1 file(s)", lines[2])

    def test_listed_single_file_passes(self):
        self.write("kernels/launch.cc", '#include "sim/units.h"\n#include "sim/dtype.h"\n')
        self.assert_clean()

    def test_other_file_of_partly_allowed_folder_fails(self):
        self.write("kernels/launch.cc", '#include "sim/units.h"\n#include "sim/engine.h"\n')
        self.assert_violation('kernels/launch.cc:2: kernels may not include "sim/engine.h" '
                              '(allowed: kernels/, sim/units.h, sim/dtype.h)')

    def test_listed_file_does_not_open_its_subfolders(self):
        self.write("kernels/launch.cc", '#include "sim/collectives/plan.h"\n')
        self.assert_violation('kernels/launch.cc:1: kernels may not include "sim/collectives/plan.h" '
                              '(allowed: kernels/, sim/units.h, sim/dtype.h)')

    def test_include_in_subfolder_belongs_to_the_top_folder(self):
        self.write("sim/collectives/ring.h", '#pragma once\n#include "models/cost_model.h"\n')
        self.assert_violation('sim/collectives/ring.h:2: sim may not include "models/cost_model.h" (allowed: sim/)')

    def test_non_root_relative_include_fails(self):
        self.write("models/lowering.cc", '#include "models/lowering.h"\n#include "cost_model.h"\n')
        code, out, _ = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn('models/lowering.cc:2: models may not include "cost_model.h"', out)
        self.assertIn("write it from the repository root", out)

    def test_parent_relative_include_fails(self):
        self.write("models/lowering.cc", '#include "../sim/units.h"\n')
        code, out, _ = self.check()
        self.assertEqual(code, 1, out)
        self.assertIn('models/lowering.cc:1: models may not include "../sim/units.h"', out)
        self.assertIn("write it from the repository root", out)

    def test_angle_bracket_includes_are_ignored(self):
        self.write("sim/engine.h", "#pragma once\n#include <models/lowering.h>\n#include <vector>\n"
                                   "#include <boost/graph/adjacency_list.hpp>\n")
        self.assert_clean()

    def test_spacing_variants_are_read(self):
        for i, line in enumerate(['  #include "models/lowering.h"', '#  include "models/lowering.h"',
                                  '\t# include\t"models/lowering.h"', '#include"models/lowering.h"']):
            with self.subTest(line=line):
                self.write("sim/engine.h", f"#pragma once\n{line}\n")
                self.assert_violation(f'sim/engine.h:2: sim may not include "models/lowering.h" (allowed: sim/)')

    def test_moc_output_of_the_file_itself_is_ignored(self):
        self.write("tests/gui_test.cc", '#include "tests/helpers.h"\n#include "gui_test.moc"\n')
        self.assert_clean()
        self.write("tests/gui_test.cc", '#include "other/gui_test.moc"\n')
        self.assert_violation('tests/gui_test.cc:1: tests may not include "other/gui_test.moc" '
                              '(write it from the repository root, e.g. "tests/...")')

    def test_commented_out_include_is_ignored(self):
        self.write("sim/engine.h", '#pragma once\n// #include "models/lowering.h"\n')
        self.assert_clean()

    def test_every_source_extension_is_scanned(self):
        for extension in (".h", ".hh", ".cc", ".cpp", ".cu", ".cuh"):
            with self.subTest(extension=extension):
                self._tmp.cleanup()
                os.makedirs(self.root)
                self.write_tree(CLEAN)
                self.write("architecture.md", TABLE)
                self.write(f"sim/x{extension}", '#include "models/lowering.h"\n')
                self.assert_violation(f'sim/x{extension}:1: sim may not include "models/lowering.h" (allowed: sim/)')

    def test_everything_layer_may_include_anything_of_ours(self):
        self.write("tests/sim_test.cc", '#include "sim/engine.h"\n#include "models/lowering.h"\n'
                                        '#include "kernels/gemm.cuh"\n')
        self.assert_clean()

    def test_folders_outside_the_table_are_ignored(self):
        self.write("build/generated.cc", '#include "models/lowering.h"\n#include "local.h"\n')
        self.write("scripts/tool.cpp", '#include "nowhere/x.h"\n')
        self.assert_clean()

    def test_missing_table_document_exits_2(self):
        missing = os.path.join(self.root, "docs", "nothing-here.md")
        code, out, err = self.check(table=missing)
        self.assertEqual(code, 2, out + err)
        self.assertIn("nothing-here.md", err)

    def test_document_without_layer_table_exits_2(self):
        self.write("architecture.md", "# No table\n\n| folder | what |\n|---|---|\n| sim/ | core |\n")
        code, out, err = self.check()
        self.assertEqual(code, 2, out + err)
        self.assertIn("architecture.md", err)
        self.assertIn("| layer | folder | may include |", err)

    def test_malformed_tables_exit_2(self):
        header = "| layer | folder | may include |\n|---|---|---|\n"
        cases = {
            "row with two cells": header + "| sim | sim/ |\n",
            "empty may-include cell": header + "| sim | sim/ |  |\n",
            "no separator row": "| layer | folder | may include |\n| sim | sim/ | — |\n| models | models/ | — |\n",
            "no rows": header + "\nprose\n",
            "unknown folder in may include": header + "| sim | sim/ | — |\n| models | models/ | sim/, simm/ |\n",
            "folder listed twice": header + "| sim | sim/ | — |\n| core | sim/ | — |\n",
            "nested folder": header + "| sim | sim/collectives/ | — |\n",
            "two layer tables": header + "| sim | sim/ | — |\n\n" + header + "| sim | sim/ | — |\n",
        }
        for name, text in cases.items():
            with self.subTest(name):
                self.write("architecture.md", text)
                code, out, err = self.check()
                self.assertEqual(code, 2, name + ": " + out + err)
                self.assertIn("architecture.md", err)

    def test_root_without_sources_exits_2(self):
        empty = os.path.join(self.root, "empty")
        os.makedirs(empty)
        code, out, err = self.check(root=empty)
        self.assertEqual(code, 2, out + err)
        self.assertIn("no source files", err)

    def test_project_table_parses(self):
        # The project's own table is well-formed (violations, exit 1, are the other test's business).
        code, out, err = self.check(root=PROJECT, table=os.path.join(PROJECT, "docs", "architecture.md"))
        self.assertIn(code, (0, 1), out + err)


if __name__ == "__main__":
    unittest.main()
