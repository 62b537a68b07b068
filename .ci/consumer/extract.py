#!/usr/bin/env python3
"""Takes the consumer recipe out of the documentation, verbatim, into a work folder (see .ci/consumer/run).

usage: extract.py WORK_DIR DOC...   (the first DOC is README.md; later ones, e.g. docs/consumers.md, are
searched for any marked block the README does not carry)

Marked blocks (an HTML comment, then a fenced block):
  <!-- consumer: install -->           ```sh    the install command, run in the repository
  <!-- consumer: pom.xml -->           ```xml   a consumer POM; its comment line naming "dependencies"
                                                 is replaced by the quick start's dependency block
  <!-- consumer: class path -->        ```sh    run in the class-path consumer
  <!-- consumer: module-info.java -->  ```java  the consumer's module descriptor
  <!-- consumer: module path -->       ```sh    run in the module-path consumer
The dependency block is the one marked <!-- consumer: dependencies --> or else the first ```xml block
naming devicebridge-core that is not a whole POM. The programs are the quick start's
(<!-- quick start: path/Name.java --> then ```java), as ReadmeQuickStartTest reads them.
"""
import os
import re
import sys

FENCE = r"\s*```(\w+)\n(.*?)```"


def marked(docs, name, lang):
    for doc in docs:
        m = re.search(r"<!-- consumer: " + re.escape(name) + r" -->" + FENCE, doc, re.S)
        if m:
            if m.group(1) != lang:
                sys.exit(f"extract: the block marked '{name}' is ```{m.group(1)}, expected ```{lang}")
            return m.group(2)
    sys.exit(f"extract: no block marked <!-- consumer: {name} --> in the documentation")


def main():
    work, *paths = sys.argv[1:]
    docs = [open(p, encoding="utf-8").read() for p in paths]
    readme = docs[0]

    deps = None
    m = re.search(r"<!-- consumer: dependencies -->" + FENCE, readme, re.S)
    if m:
        deps = m.group(2)
    else:
        for lang, body in re.findall(r"```(\w+)\n(.*?)```", readme, re.S):
            if lang == "xml" and "<artifactId>devicebridge-core</artifactId>" in body and "<project" not in body:
                deps = body
                break
    if deps is None:
        sys.exit("extract: no dependency block (```xml naming devicebridge-core) in README.md")

    programs = re.findall(r"<!-- quick start: (\S+) -->\s*```java\n(.*?)```", readme, re.S)
    if not programs:
        sys.exit("extract: no quick start programs in README.md")

    pom = marked(docs, "pom.xml", "xml")
    lines = pom.splitlines(keepends=True)
    slot = [i for i, l in enumerate(lines) if re.match(r"\s*<!--.*dependencies.*-->\s*$", l)]
    if len(slot) != 1:
        sys.exit("extract: the consumer POM needs exactly one comment line naming the dependencies")
    pom = "".join(lines[: slot[0]]) + deps + "".join(lines[slot[0] + 1:])

    os.makedirs(work, exist_ok=True)
    files = {
        "install.sh": marked(docs, "install", "sh"),
        "pom.xml": pom,
        "class-path.sh": marked(docs, "class path", "sh"),
        "module-info.java": marked(docs, "module-info.java", "java"),
        "module-path.sh": marked(docs, "module path", "sh"),
        "dependencies.xml": deps,
    }
    # The command of each sh block that runs a quick start program, alone, with the program's class name
    # made "$1": the consumer runs every other program through it. The module path's package is the one
    # that command names (-m module/package.Class).
    names = [os.path.basename(p)[: -len(".java")] for p, _ in programs]
    for block in ("class-path.sh", "module-path.sh"):
        commands = re.sub(r"\\\n\s*", " ", files[block]).splitlines()
        run = [c for c in commands if any(re.search(r"[\s./]" + n + r"\b", c) for n in names)]
        if len(run) != 1:
            sys.exit(f"extract: the {block[:-3]} block needs exactly one command running a quick start program")
        name = next(n for n in names if re.search(r"[\s./]" + n + r"\b", run[0]))
        files[block[:-3] + ".program.sh"] = re.sub(r"(?<=[\s./])" + name + r"\b", '"$1"', run[0]) + "\n"
        if block == "module-path.sh":
            m = re.search(r"-m\s+(\S+)/(\S+)\." + name + r"\b", run[0])
            if not m:
                sys.exit("extract: the module path command runs no -m module/package.Class quick start program")
            files["module-path.package"] = m.group(2) + "\n"
    for name, body in files.items():
        with open(os.path.join(work, name), "w", encoding="utf-8") as f:
            f.write(body)
    os.makedirs(os.path.join(work, "programs"), exist_ok=True)
    for path, body in programs:
        with open(os.path.join(work, "programs", os.path.basename(path)), "w", encoding="utf-8") as f:
            f.write(body)
    print("extract: " + ", ".join(list(files) + [os.path.basename(p) for p, _ in programs]))


if __name__ == "__main__":
    main()
