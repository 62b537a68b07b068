#!/usr/bin/env python3
"""Checks an unpacked Central Portal bundle (see .ci/release-check).

usage: check-bundle.py DIR GROUP_ID VERSION ARTIFACT:PACKAGING...

The bundle must hold exactly the listed artifacts (so nothing else: no bench); a jar artifact its POM,
jar, sources jar and javadoc jar; every one of those files its .asc, .md5 and .sha1, the checksums right;
each POM (with what it inherits from a parent POM in the bundle) what Maven Central requires: groupId,
artifactId, version (a release), name, description, url, a licence with name and url, a developer, scm url
and connection, and no <repositories>. Every jar carries META-INF/LICENSE and META-INF/NOTICE; each main
jar its module descriptor and Implementation-Version. Signatures are verified by the caller (gpg).
"""
import hashlib
import os
import sys
import xml.etree.ElementTree as ET
import zipfile

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
errors = []


def fail(msg):
    errors.append(msg)


def text(root, path):
    e = root.find(path, NS)
    return e.text.strip() if e is not None and e.text and e.text.strip() else None


def main():
    top, group, version, *wanted = sys.argv[1:]
    expected = dict(w.split(":") for w in wanted)
    base = os.path.join(top, *group.split("."))
    found = sorted(os.listdir(base)) if os.path.isdir(base) else []
    if found != sorted(expected):
        fail(f"artifacts in the bundle under {group}: {found}, expected exactly {sorted(expected)}")
    other = [d for d, _, files in os.walk(top) if files and not d.startswith(base)]
    if other:
        fail(f"files outside {group}: {other}")
    for d, _, files in os.walk(top):
        if "bench" in d or any("bench" in f for f in files):
            fail(f"bench in the bundle: {d} {files}")

    poms = {}
    for artifact, packaging in expected.items():
        d = os.path.join(base, artifact, version)
        stem = os.path.join(d, f"{artifact}-{version}")
        mains = [stem + ".pom"]
        if packaging == "jar":
            mains += [stem + ".jar", stem + "-sources.jar", stem + "-javadoc.jar"]
        present = set(os.listdir(d)) if os.path.isdir(d) else set()
        for m in mains:
            if not os.path.isfile(m):
                fail(f"missing {os.path.relpath(m, top)}")
                continue
            data = open(m, "rb").read()
            for ext, algo in ((".md5", "md5"), (".sha1", "sha1")):
                if not os.path.isfile(m + ext):
                    fail(f"missing {os.path.relpath(m, top)}{ext}")
                elif open(m + ext).read().split()[0].lower() != hashlib.new(algo, data).hexdigest():
                    fail(f"wrong {ext} for {os.path.relpath(m, top)}")
            if not os.path.isfile(m + ".asc"):
                fail(f"missing {os.path.relpath(m, top)}.asc")
            if m.endswith(".jar"):
                check_jar(m, top, version, main=m == stem + ".jar")
        known = {os.path.basename(m) + s for m in mains for s in ("", ".asc", ".md5", ".sha1", ".sha256", ".sha512")}
        unexpected = present - known
        if unexpected:
            fail(f"unexpected files in {artifact}: {sorted(unexpected)}")
        if os.path.isfile(stem + ".pom"):
            poms[artifact] = ET.parse(stem + ".pom").getroot()

    for artifact, pom in poms.items():
        check_pom(artifact, pom, poms, group, version)

    if errors:
        for e in errors:
            print("check-bundle: FAIL: " + e, file=sys.stderr)
        sys.exit(1)
    n = sum(1 for _, _, files in os.walk(top) for _ in files)
    print(f"check-bundle: {len(expected)} artifacts, {n} files: signatures, checksums and POM fields present")


def check_jar(path, top, version, main):
    rel = os.path.relpath(path, top)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for f in ("META-INF/LICENSE", "META-INF/NOTICE"):
            if f not in names:
                fail(f"{rel} has no {f}")
        if main:
            if "module-info.class" not in names:
                fail(f"{rel} has no module-info.class")
            manifest = z.read("META-INF/MANIFEST.MF").decode()
            if f"Implementation-Version: {version}" not in manifest:
                fail(f"{rel}: no Implementation-Version: {version} in its manifest")
        if path.endswith("-javadoc.jar") and "devicebridge-core" in rel:
            if not any(n.endswith("/module-summary.html") for n in names):
                fail(f"{rel} is not a modular javadoc (no module-summary.html)")


def check_pom(artifact, pom, poms, group, version):
    def field(path):
        v = text(pom, path)
        parent_id = text(pom, "m:parent/m:artifactId")
        if v is None and parent_id in poms and parent_id != artifact:
            v = text(poms[parent_id], path)
        return v

    if (text(pom, "m:groupId") or text(pom, "m:parent/m:groupId")) != group:
        fail(f"{artifact}.pom: groupId is not {group}")
    if text(pom, "m:artifactId") != artifact:
        fail(f"{artifact}.pom: artifactId is not {artifact}")
    if (text(pom, "m:version") or text(pom, "m:parent/m:version")) != version:
        fail(f"{artifact}.pom: version is not {version}")
    snapshots = [e.text for e in pom.iter() if e.tag.endswith("}version") and e.text and "SNAPSHOT" in e.text]
    if snapshots:
        fail(f"{artifact}.pom names a SNAPSHOT version: {snapshots}")
    for path, what in (("m:name", "name"), ("m:description", "description"), ("m:url", "url"),
                       ("m:licenses/m:license/m:name", "licence name"), ("m:licenses/m:license/m:url", "licence url"),
                       ("m:developers/m:developer/m:name", "developer name"), ("m:scm/m:url", "scm url"),
                       ("m:scm/m:connection", "scm connection")):
        if field(path) is None:
            fail(f"{artifact}.pom: no {what} ({path.replace('m:', '')})")
    if pom.find("m:repositories", NS) is not None:
        fail(f"{artifact}.pom names <repositories>")


if __name__ == "__main__":
    main()
