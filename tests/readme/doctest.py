#!/usr/bin/env python3
"""Runs every SQL example of a Markdown file, in order, and checks the output it shows.

The README and the pages under docs/ are the first thing a user runs, so their examples are a
test: a change that makes an example print something else, or fail, fails this script. The test
command (stage 3) runs it on each of them, each page in a fresh database of its own.

Rules, which the README and every page follow:
- every ```sql block runs, in document order, in one psql session on a fresh database, so a
  block may use what earlier blocks of the same page created (a page creates its own tables);
- an untagged ``` block right after a ```sql block (nothing but blank lines between them) is
  the output psql prints for it (`psql -X -q -P footer=off`): query results, NOTICEs, errors;
  trailing spaces and blank lines at either end do not count, a line `...` stands for any
  number of lines, and an EXPLAIN's "QUERY PLAN" header may be left out;
- a ```sql block without an output block must run without an ERROR;
- `<!-- doctest: skip: REASON -->` on the line before a block marks an example that cannot run
  as written (a file path of yours, a server setting); the reason is printed.

Usage: doctest.py FILE.md -- PSQL COMMAND...   (the psql command connects to an empty database)
Prints one line per example and exits non-zero when any failed.
"""
import re
import subprocess
import sys

MARK = "<<<doctest example {}>>>"
SKIP = re.compile(r"<!--\s*doctest:\s*skip:\s*(.*?)\s*-->")


def examples(path):
    """Yields (line, sql, expected output or None, skip reason or None) for each ```sql block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, lang = i, fence.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        before = lines[start - 1] if start > 0 else ""
        skip = SKIP.search(before)
        blocks.append((start + 1, j + 1, lang, lines[start + 1:j], skip.group(1) if skip else None))
        i = j + 1
    for n, (first, last, lang, body, skip) in enumerate(blocks):
        if lang != "sql":
            continue
        expected = None
        if n + 1 < len(blocks):
            nfirst, _, nlang, nbody, _ = blocks[n + 1]
            if nlang == "" and all(not l.strip() for l in lines[last:nfirst - 1]):
                expected = nbody
        yield first, "\n".join(body), expected, skip


def trim(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(actual, expected):
    """True when the actual lines fit the expected ones, `...` matching any run of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(actual[i:], expected[1:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and matches(actual[1:], expected[1:])


def without_plan_header(lines):
    if len(lines) >= 2 and lines[0].strip() == "QUERY PLAN" and set(lines[1]) <= {"-"}:
        return lines[2:]
    return lines


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    path, psql = sys.argv[1], sys.argv[3:]
    found = list(examples(path))
    script = ["\\set VERBOSITY default", "\\pset footer off"]
    for n, (line, sql, _, skip) in enumerate(found):
        script.append("\\echo " + MARK.format(n))
        if not skip:
            script.append(sql)
    script.append("\\echo " + MARK.format(len(found)))
    run = subprocess.run(psql + ["-X", "-q", "-v", "ON_ERROR_STOP=0"], input="\n".join(script) + "\n",
                         capture_output=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    out = run.stdout.split("\n")
    outputs, current = {}, None
    for l in out:
        m = re.fullmatch(r"<<<doctest example (\d+)>>>", l)
        if m:
            current = int(m.group(1))
            outputs[current] = []
        elif current is not None:
            outputs[current].append(l)
        elif l.strip():
            print(l)
    failed = 0
    for n, (line, sql, expected, skip) in enumerate(found):
        where = f"{path}:{line}"
        if skip:
            print(f"skip  {where}: {skip}")
            continue
        actual = trim(outputs.get(n, ["(no output: psql stopped before this example)", "ERROR:"]))
        if expected is None:
            ok = not any(l.startswith(("ERROR:", "FATAL:", "PANIC:")) for l in actual)
        else:
            want = trim(expected)
            ok = matches(actual, want) or matches(without_plan_header(actual), want)
        if ok:
            print(f"ok    {where}")
            continue
        failed += 1
        print(f"FAIL  {where}")
        print("  ran:\n    " + sql.replace("\n", "\n    "))
        if expected is not None:
            print("  expected:\n    " + "\n    ".join(trim(expected)))
        print("  got:\n    " + "\n    ".join(actual))
    print(f"{path}: {len(found) - failed} of {len(found)} SQL examples as shown" +
          (f", {failed} failed" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
