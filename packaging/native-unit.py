#!/usr/bin/env python3
"""Writes the native supervisor's systemd unit from its template with SystemCallFilter=
generated from the OCI seccomp JSON (docs/native-scopes.md "Deployment files"): the allowlist
is kept in one place.
Usage: native-unit.py TEMPLATE SECCOMP_JSON OUTPUT"""
import json
import sys


def allowlist(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("defaultAction") != "SCMP_ACT_ERRNO":
        raise SystemExit(f"{path}: defaultAction must be SCMP_ACT_ERRNO")
    names = []
    for rule in doc["syscalls"]:
        if rule.get("action") != "SCMP_ACT_ALLOW" or rule.get("args"):
            raise SystemExit(f"{path}: only unconditional SCMP_ACT_ALLOW rules can become SystemCallFilter=")
        names.extend(rule["names"])
    if len(set(names)) != len(names):
        raise SystemExit(f"{path}: a syscall is listed twice")
    return sorted(names)


def main():
    template, seccomp, output = sys.argv[1:4]
    with open(template) as f:
        text = f.read()
    if text.count("@SYSCALLS@") != 1:
        raise SystemExit(f"{template}: expected one @SYSCALLS@")
    unit = text.replace("@SYSCALLS@", " ".join(allowlist(seccomp)))  # refused before any output
    with open(output, "w") as f:
        f.write(unit)


if __name__ == "__main__":
    main()
