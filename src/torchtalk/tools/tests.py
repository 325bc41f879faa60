"""Tools of the test layer: find_similar_tests, list_test_utils, test_file_info."""

from __future__ import annotations

from ..query import similar_tests, testfiles
from ..render import next as nxt
from ..render import tests as r_tests
from . import knows
from .table import REQUIRED, Param, Tool

TOOLS = [
    Tool("find_similar_tests",
         "Which tests cover this, and how do I run them? Tests for an op, function or concept, ranked: test names "
         "first, then the OpInfo entries that the generic op tests use, then test bodies that call it; each with "
         "file:line and a runnable command (and the names PyTorch's device/dtype generators give it). "
         "Example: find_similar_tests(\"cumsum\")",
         (Param("query", str, REQUIRED, "op, function or concept: cumsum, softmax, torch.nn.Linear", metavar="TEXT"),
          Param("limit", int, 20, "how many tests, 1..500", metavar="N")),
         similar_tests.similar_tests, r_tests.render_similar_tests, nxt.next_similar_tests),
    Tool("list_test_utils",
         "Which test helpers exist (decorators, fixtures, assertions)? Helpers in torch/testing/_internal, derived "
         "from the source, with file:line and a line on each: category 'fixtures', 'assertions', 'decorators', ... "
         "or 'all'; most imported first. Example: list_test_utils(\"decorators\")",
         (Param("category", str, "all", "all | fixtures | assertions | decorators | ...", metavar="CATEGORY"),
          Param("limit", int, 25, "how many per category, most imported first, 1..500", metavar="N")),
         testfiles.list_test_utils, r_tests.render_test_utils, nxt.next_test_utils),
    Tool("test_file_info",
         "What is in this test file, and how do I run one of its tests? Its classes with test counts and the "
         "classes the device-type generator makes (TestFooCPU/CUDA), then its tests class by class: name, file:line, "
         "the decorators that decide where each runs (dtypes, devices, skips, @ops/@parametrize), and the command "
         "that runs one; a large file lists as many as fit and names the call that lists the rest. Also the "
         "decorators and torch.testing._internal utilities it uses and the ops it exercises. Accepts 'test_torch', "
         "'test_nn.py', 'test/test_nn.py' or a pytest node id as CI prints it "
         "('test/test_nn.py::TestNNDeviceTypeCPU::test_relu_cpu_float32': that class and test); paths outside the "
         "source tree are refused. "
         "Example: test_file_info(\"test_nn\", class_name=\"TestNNDeviceType\", query=\"relu\")",
         (Param("file_path", str, REQUIRED, "test file: test_torch, test_nn.py, test/test_nn.py, or a pytest node id "
                "test/test_nn.py::TestNN::test_x", metavar="PATH"),
          Param("class_name", str, "", "only this test class (as written, or a generated one: TestNNDeviceTypeCUDA)",
                metavar="CLASS"),
          Param("query", str, "", "only tests whose name contains this text (case-insensitive): conv, grad",
                metavar="TEXT"),
          Param("offset", int, 0, "list from the N-th matching test (the answer names the offset of its next page)",
                metavar="N")),
         testfiles.test_file_info, r_tests.render_test_file, nxt.next_test_file, knows.test_file),
]
