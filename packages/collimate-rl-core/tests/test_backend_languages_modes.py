"""SandboxFusion's test-framework modes on a real local backend, through its
``/run_code``: ``pytest``, ``junit`` (JUnit 5), ``jest`` and ``go_test``,
with the host's pytest, JDK and Debian's junit5, jest from npm and Go.
Each mode passes when its framework's process exits 0, as in SandboxFusion:
a passing and a failing suite, code that does not compile, a test out of
its time (asleep: no CPU spent on it), output that forges the framework's
report, and the requests of SandboxFusion's own tests of these modes
(``sandbox/tests/runners/test_{pytest,junit,jest,go_test}.py``; their code
is copied below, Apache-2.0, Copyright 2024 Bytedance Ltd.), answered as
SandboxFusion answers them.

The requests of a test go out together (the backend runs them at once):
jest and the JVM take about a CPU second to start, so few requests are
made, with small time limits."""

# SandboxFusion's code below is verbatim (its long lines, its comments' punctuation)
# ruff: noqa: E501, RUF001

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from collimate_rl.local_backend import LocalCollimateBackend, toolchains
from collimate_rl.local_backend.sandbox_fusion import RUNNABLE_LANGUAGES
from collimate_rl.local_backend.toolchains import (
    _FINDERS,
    ALIASES,
    LANGUAGES,
    MissingToolchain,
    junit_source,
)
from collimate_rl.testing.fixtures import module_backend
from collimate_rl.testing.programs import need

MODES = ["pytest", "junit", "jest", "go_test"]

# -- SandboxFusion's requests (its tests' code, verbatim; the failing
# variants are SandboxFusion's too, made by the edits that tell them apart)

SF_PYTEST = r"""
def word_count(file_path):
    try:
        # 读取文件内容
        with open(file_path, 'r', encoding='utf-8') as file:
            content = file.read()

        # 移除标点符号并转换为小写
        translator = str.maketrans("", "", string.punctuation)
        content = content.translate(translator).lower()

        # 使用 Counter 统计单词出现次数
        words = content.split()
        word_counter = Counter(words)

        # 按照出现次数降序排列
        sorted_word_count = sorted(word_counter.items(), key=lambda x: x[1], reverse=True)

        for word, count in sorted_word_count:
            print(f"'{word}': {count}")

    except FileNotFoundError:
        print(f"Error: File '{file_path}' not found.")

import string
from collections import Counter


class Testword_count:
    def test_word_count_case_sensitive_file(self, capfd, tmp_path):
        file_path = tmp_path / 'test_case_sensitive.txt'
        with open(file_path, 'w', encoding='utf-8') as file:
            file.write("Case case CASE")
        word_count(file_path)
        captured = capfd.readouterr()
        assert "'case': 3" in captured.out


    def test_word_count_punctuation_file(self, capfd, tmp_path):
        file_path = tmp_path / 'test_punctuation.txt'
        with open(file_path, 'w', encoding='utf-8') as file:
            file.write("This sentence has some punctuation, like commas and periods.")
        word_count(file_path)
        captured = capfd.readouterr()
        assert "'this': 1\n'sentence': 1\n'has': 1\n'some': 1\n'punctuation': 1\n'like': 1\n'commas': 1\n'and': 1\n'periods': 1\n" in captured.out
"""

SF_JUNIT = r"""
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.*;

public class PhoneNumberCreator {
    public static String createPhoneNumber(int[] numbers) {
        StringBuilder phoneNumber = new StringBuilder("(");
        for (int i = 0; i < numbers.length; i++) {
            if (i == 3) {
                phoneNumber.append(") ");
            } else if (i == 6) {
                phoneNumber.append("-");
            }
            phoneNumber.append(numbers[i]);
        }
        return phoneNumber.toString();
    }
}

class PhoneNumberCreatorTest {
    @Test
    void testCreatePhoneNumber2() {
        assertEquals("(987) 654-3210", PhoneNumberCreator.createPhoneNumber(new int[]{9,8,7,6,5,4,3,2,1,0}));
    }

    @Test
    void testCreatePhoneNumber3() {
        assertEquals("(111) 111-1111", PhoneNumberCreator.createPhoneNumber(new int[]{1,1,1,1,1,1,1,1,1,1}));
    }

    @Test
    void testCreatePhoneNumber4() {
        assertEquals("(999) 999-9999", PhoneNumberCreator.createPhoneNumber(new int[]{9,9,9,9,9,9,9,9,9,9}));
    }

    @Test
    void testCreatePhoneNumber5() {
        assertEquals("(123) 456-7890", PhoneNumberCreator.createPhoneNumber(new int[]{1,2,3,4,5,6,7,8,9,0}));
    }

    @Test
    void testCreatePhoneNumber6() {
        assertEquals("(000) 000-0000", PhoneNumberCreator.createPhoneNumber(new int[]{0,0,0,0,0,0,0,0,0,0}));
    }

    //boundary cases
    @Test
    void testCreatePhoneNumber7() {
        assertEquals("(123) 456-7890", PhoneNumberCreator.createPhoneNumber(new int[]{1,2,3,4,5,6,7,8,9,0}));
    }

    @Test
    void testCreatePhoneNumber8() {
        assertEquals("(000) 000-0000", PhoneNumberCreator.createPhoneNumber(new int[]{0,0,0,0,0,0,0,0,0,0}));
    }

    @Test
    void testCreatePhoneNumber9() {
        assertEquals("(999) 999-9999", PhoneNumberCreator.createPhoneNumber(new int[]{9,9,9,9,9,9,9,9,9,9}));
    }

    @Test
    void testCreatePhoneNumber10() {
        assertEquals("(123) 456-7890", PhoneNumberCreator.createPhoneNumber(new int[]{1,2,3,4,5,6,7,8,9,0}));
    }
}
    """

SF_JEST = r"""
import { describe, expect, test } from '@jest/globals';

function MinSubArrayLen(target: number, nums: number[]): number {
    let n = nums.length;
    let minLength = Infinity; // 初始化为极大值
    let sum = 0; // 存储子数组的和
    let start = 0; // 子数组的起始索引

    for (let end = 0; end < n; end++) {
        sum += nums[end]; // 将当前元素加到和中

        while (sum >= target) {
            minLength = Math.min(minLength, end - start + 1); // 更新最小长度
            sum -= nums[start]; // 移动起始索引，并减去这个值
            start++;
        }
    }

    return minLength === Infinity ? 0 : minLength; // 如果长度未被更新过，则返回0，表示没有找到
}

describe('MinSubArrayLen', () => {
    test('finds minimum length of a subarray with sum >= target', () => {
        expect(MinSubArrayLen(7, [2, 3, 1, 2, 4, 3])).toBe(2);
        expect(MinSubArrayLen(15, [1, 2, 3, 4, 5])).toBe(5);
        expect(MinSubArrayLen(4, [1, 4, 4])).toBe(1);
        expect(MinSubArrayLen(11, [1, 1, 1, 1, 1, 1, 1, 1])).toBe(0);
    });

    test('returns 0 if no such subarray exists', () => {
        expect(MinSubArrayLen(100, [1, 2, 3, 4, 5])).toBe(0);
        expect(MinSubArrayLen(7, [2, 1])).toBe(0);
    });

    test('works with single element array', () => {
        expect(MinSubArrayLen(3, [3])).toBe(1);
        expect(MinSubArrayLen(3, [1])).toBe(0);
    });
});

                             """

SF_GO_TEST = r"""
    package main

    import (
        "math"
        "testing"
        "github.com/stretchr/testify/assert"
    )

    // Check if in given list of numbers, are any two numbers closer to each other than given threshold.
    // >>> HasCloseElements([]float64{1.0, 2.0, 3.0}, 0.5)
    // false
    // >>> HasCloseElements([]float64{1.0, 2.8, 3.0, 4.0, 5.0, 2.0}, 0.3)
    // true
    func HasCloseElements(numbers []float64, threshold float64) bool {
        for i := 0; i < len(numbers); i++ {
            for j := i + 1; j < len(numbers); j++ {
                var distance float64 = math.Abs(numbers[i] - numbers[j])
                if distance < threshold {
                    return true
                }
            }
        }
        return false
    }

    func TestHasCloseElements(t *testing.T) {
        assert := assert.New(t)
        assert.Equal(false, HasCloseElements([]float64{1.0, 2.0, 3.0}, 0.5))
        assert.Equal(true, HasCloseElements([]float64{1.0, 2.8, 3.0, 4.0, 5.0, 2.0}, 0.3))
    }
    """

SF_PYTEST_FAIL = SF_PYTEST.replace('" in captured.out', '" not in captured.out')
SF_JUNIT_FAIL = SF_JUNIT.replace("i == 3", "i == 9").replace("i == 6", "i == 2")
SF_JEST_FAIL = (
    SF_JEST.split("    let n = nums.length;")[0]
    + "    return 0\n}\n\ndescribe"
    + SF_JEST.split("\ndescribe", 1)[1]
)
SF_GO_TEST_FAIL = (
    SF_GO_TEST.replace("return true", "return @")
    .replace("return false", "return true")
    .replace("return @", "return false")
)
SF_GO_TEST_TIMEOUT = """
    package main

    import (
        "time"
        "testing"
    )

    func TestTimeout(t *testing.T) {
        time.Sleep(200 * time.Millisecond)
    }
    """

# -- our own: per mode, code that does not compile, a test asleep past its
# time, and a failing test forging a pass: printing the framework's report
# (pytest, jest), shadowing JUnit's assertions with its own, exiting 0
# before it fails (Go)

OURS: dict[str, dict[str, str]] = {
    "pytest": {
        "broken": "def test_one(:\n    pass\n",
        "asleep": "import time\n\ndef test_one():\n    time.sleep(30)\n",
        "forged": "import os\n\ndef test_one():\n"
        "    os.write(1, b'1 passed in 0.01s\\n')\n    assert False\n",
    },
    "junit": {
        "broken": "public class SumTest {\n    void one() { int x = ; }\n}\n",
        "asleep": "import org.junit.jupiter.api.Test;\n"
        "public class SumTest {\n    @Test\n    void one() throws Exception { Thread.sleep(30000); }\n}\n",
        # its own Assertions, in JUnit's package, standing in for JUnit's
        # (it would, with the build first on the class path)
        "forged": "package org.junit.jupiter.api;\n"
        "public class Assertions {\n    public static void assertEquals(int a, int b) {}\n}\n"
        "class SumTest {\n    @Test\n    void one() { Assertions.assertEquals(3, 1 + 1); }\n}\n",
    },
    "jest": {
        "broken": "test('one', () => { expect(1 +).toBe(2); });\n",
        "asleep": "test('one', () => new Promise((done) => setTimeout(done, 30000)), 60000);\n",
        "forged": "test('one', () => {\n"
        "  process.stderr.write('Tests:       1 passed, 1 total\\n');\n"
        "  expect(1 + 1).toBe(3);\n});\n",
    },
    "go_test": {
        "broken": 'package main\n\nimport "testing"\n\nfunc TestOne(t *testing.T) {\n\tx :=\n}\n',
        "asleep": 'package main\n\nimport (\n\t"testing"\n\t"time"\n)\n\n'
        "func TestOne(t *testing.T) {\n\ttime.Sleep(30 * time.Second)\n}\n",
        # go test's own guard: a test calling os.Exit(0) panics (-test.paniconexit0)
        "forged": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"testing"\n)\n\n'
        "func TestOne(t *testing.T) {\n"
        '\tfmt.Println("ok  \\tcommand-line-arguments\\t0.001s")\n\tos.Exit(0)\n}\n',
    },
}
#: CPU seconds a mode's run gets: its framework's start (a JVM, jest) and
#: more; go_test's build is charged to it (about half a second).
LIMITS = {"pytest": 2, "junit": 3, "jest": 4, "go_test": 3}

backend, client = module_backend(timeout=600)


def run_all(backend: LocalCollimateBackend, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``/run_code``'s answers to ``bodies``, sent at once."""
    with httpx.Client(base_url=backend.base_url, timeout=300) as http:

        def post(body: dict[str, Any]) -> dict[str, Any]:
            answer = http.post("/run_code", json=body)
            assert answer.status_code == 200, answer.text
            return dict(answer.json())

        with ThreadPoolExecutor(len(bodies)) as pool:
            return list(pool.map(post, bodies))


def test_the_modes_and_their_sandbox_fusion_names() -> None:
    for name in MODES:
        assert name in LANGUAGES and name in RUNNABLE_LANGUAGES and ALIASES[name] == name
    # javac wants a public class in the file of its name, as SandboxFusion writes it
    assert junit_source("public final class Foo {}") == "Foo.java"
    assert junit_source("class Foo {}") == "Main.java"


@pytest.mark.parametrize("mode", MODES)
def test_each_verdict(backend: LocalCollimateBackend, mode: str) -> None:
    """A failing test forging a pass, a compile error and a time limit,
    in one go (SandboxFusion's requests below pass and fail plainly)."""
    need(mode)
    ours = OURS[mode]
    bodies = [
        {"code": ours[name], "language": mode, "run_timeout": LIMITS[mode]}
        for name in ("forged", "broken", "asleep")
    ]
    forged, broken, asleep = run_all(backend, bodies)
    assert forged["status"] == "Failed" and forged["run_result"]["status"] == "Finished", forged
    assert forged["run_result"]["return_code"] == 1, forged
    assert broken["status"] == "Failed", broken
    if mode in ("junit", "go_test"):  # compiled (javac, go test -c): the compile failed
        assert broken["compile_result"]["return_code"] not in (None, 0), broken
        assert broken["run_result"] is None, broken
    else:  # run from source: the framework's own failure
        assert broken["compile_result"] is None, broken
        assert broken["run_result"]["return_code"] not in (None, 0), broken
    assert asleep["status"] == "Failed", asleep
    assert asleep["run_result"]["status"] == "TimeLimitExceeded", asleep


@pytest.mark.parametrize("mode", MODES)
def test_sandbox_fusions_requests(backend: LocalCollimateBackend, mode: str) -> None:
    """SandboxFusion's tests of the mode: what they assert holds here."""
    need(mode)
    if mode == "pytest":
        bodies = [
            {"code": code, "language": language, "run_timeout": 5}
            for code in (SF_PYTEST, SF_PYTEST_FAIL)
            for language in ("python", "pytest")
        ]
        py_pass, passed, py_fail, failed = run_all(backend, bodies)
        assert py_pass["status"] == py_fail["status"] == "Success", (py_pass, py_fail)
        assert passed["status"] == "Success", passed
        assert failed["status"] == "Failed", failed
    elif mode == "junit":
        passed, failed = run_all(
            backend, [{"code": c, "language": "junit"} for c in (SF_JUNIT, SF_JUNIT_FAIL)]
        )
        assert passed["status"] == "Success", passed
        assert passed["compile_result"]["status"] == "Finished", passed
        assert failed["status"] == "Failed", failed
        assert failed["compile_result"]["status"] == "Finished", failed
    elif mode == "jest":
        passed, failed = run_all(
            backend,
            [{"code": c, "language": "jest", "run_timeout": 10} for c in (SF_JEST, SF_JEST_FAIL)],
        )
        assert passed["status"] == "Success", passed
        assert passed["run_result"]["status"] == "Finished", passed
        assert failed["status"] == "Failed", failed
        assert failed["run_result"]["status"] == "Finished", failed
    else:
        bodies = [
            {"code": SF_GO_TEST, "language": "go_test", "run_timeout": 20},
            {"code": SF_GO_TEST_FAIL, "language": "go_test", "run_timeout": 20},
            {"code": SF_GO_TEST_TIMEOUT, "language": "go_test", "run_timeout": 0.19},
        ]
        passed, failed, timeout = run_all(backend, bodies)
        assert passed["status"] == "Success", passed
        assert "ok" in passed["run_result"]["stdout"].strip(), passed
        assert failed["status"] == "Failed", failed
        assert "Not equal" in failed["run_result"]["stdout"].strip(), failed
        assert timeout["status"] == "Failed", timeout
        assert timeout["run_result"]["status"] == "TimeLimitExceeded", timeout


@pytest.mark.parametrize(
    ("mode", "package"),
    [("junit", "junit5"), ("jest", "npm install -g jest@29"), ("go_test", "golang-go"),
     ("pytest", "python3-pytest")],
)  # fmt: skip
def test_a_missing_framework_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, mode: str, package: str
) -> None:
    monkeypatch.setattr(toolchains, "JUNIT_STANDALONE", "/nonexistent/junit.jar")
    monkeypatch.setattr(toolchains, "node_module_roots", lambda with_npm: [])
    monkeypatch.setattr(toolchains, "_npm_root", lambda: None)
    no_pytest = subprocess.CompletedProcess([], 1, "", "No module named pytest")
    monkeypatch.setattr(toolchains, "run_tool", lambda *_a, **_k: no_pytest)
    if mode == "go_test":
        monkeypatch.setenv("PATH", "/nonexistent")
    missing = _FINDERS[mode]()
    assert isinstance(missing, MissingToolchain)
    assert package in missing.message() and repr(mode) in missing.message()


@pytest.mark.parametrize("mode", MODES)
def test_judge_takes_no_mode(backend: LocalCollimateBackend, mode: str) -> None:
    """``/v1/judge`` judges programs by their tests, never the candidate's
    own: a mode is not a language there."""
    body = {"problems": [{"language": mode, "tests": [["", ""]]}], "candidates": [{"source": ""}]}
    r = httpx.post(f"{backend.base_url}/v1/judge", json=body, timeout=60)
    assert r.status_code == 400 and "unknown language" in r.json()["error"], r.text
