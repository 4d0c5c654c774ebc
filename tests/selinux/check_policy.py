#!/usr/bin/env python3
"""The SELinux policy module (selinux/policy/) compiles, packages, and grants
nothing broad.

Compiles gpuslice.te with `checkmodule -M -m` and packages it with the file
contexts (`semodule_package`), unpacks the result and compares the file
contexts, then reads the module source rule by rule: only container_t may be
granted anything, only on the NVIDIA device type, only the permissions a
character device needs (no `*`, no `~`, no attributes such as file_type or
device_node, no transitions, no permissive domains); the file contexts give
only container_ro_file_t and container_runtime_exec_t at s0, on gpuslice's own
paths. It also checks that these checks fail on a broad rule.

    python3 tests/selinux/check_policy.py [SOURCE_DIR]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ALLOWED_SOURCES = {"container_t"}
ALLOWED_TARGETS = {"xserver_misc_device_t": ("chr_file", {"getattr", "open", "read", "write", "append", "ioctl",
                                                          "lock", "map"})}
ALLOWED_FC_TYPES = {"container_ro_file_t", "container_runtime_exec_t"}
FORBIDDEN_STATEMENTS = ("type_transition", "typeattribute", "attribute", "permissive", "role ", "allowxperm",
                        "neverallow", "type_change", "range_transition", "bool ", "if ")


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def split_requires(body):
    """(the require blocks' contents, the text outside them); braces nest."""
    blocks, outside, i = [], [], 0
    for m in re.finditer(r"\brequire\s*\{", body):
        if m.start() < i:
            continue
        outside.append(body[i:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(body):
            depth += {"{": 1, "}": -1}.get(body[j], 0)
            j += 1
        blocks.append(body[m.end():j - 1])
        i = j
    outside.append(body[i:])
    return blocks, "".join(outside)


def rule_problems(te_text):
    """What is too broad in a module source; [] when nothing is."""
    problems = []
    blocks, outside = split_requires(strip_comments(te_text))
    for block in blocks:
        for stmt in block.split(";"):
            if stmt.strip().startswith("attribute"):
                problems.append(f"requires an attribute: {stmt.strip()}")
    for stmt in (s.strip() for s in outside.split(";")):
        if not stmt or stmt.startswith("module "):
            continue
        for word in FORBIDDEN_STATEMENTS:
            if stmt.startswith(word) or stmt.startswith(word.strip() + " "):
                problems.append(f"statement not allowed here: {stmt}")
        if stmt.startswith("type "):
            continue  # a type of our own: fine, it has no rule unless one below gives it
        m = re.fullmatch(r"(allow|auditallow|dontaudit)\s+(\S+)\s+(\S+?):(\S+)\s+(\{[^}]*\}|\S+)", stmt, re.S)
        if not m:
            if not any(stmt.startswith(w.strip()) for w in FORBIDDEN_STATEMENTS):
                problems.append(f"statement this check cannot read: {stmt}")
            continue
        kind, source, target, cls, perms = m.groups()
        perm_set = set(perms.strip("{} ").split())
        if kind != "allow":
            continue
        if "{" in source or source not in ALLOWED_SOURCES:
            problems.append(f"grants to {source}, not container_t alone: {stmt}")
        if "{" in target or target not in ALLOWED_TARGETS:
            problems.append(f"grants on {target}, not the NVIDIA device type: {stmt}")
            continue
        want_class, want_perms = ALLOWED_TARGETS[target]
        if cls != want_class:
            problems.append(f"class {cls} on {target}: {stmt}")
        if "*" in perms or "~" in perms or not perm_set <= want_perms:
            problems.append(f"permissions beyond a device's {sorted(want_perms)}: {stmt}")
    return problems


def fc_problems(fc_text):
    problems = []
    for line in strip_comments(fc_text).splitlines():
        fields = line.split()
        if not fields:
            continue
        path, context = fields[0], fields[-1]
        parts = context.split(":")
        if len(parts) != 4 or parts[2] not in ALLOWED_FC_TYPES or parts[3] != "s0":
            problems.append(f"{path}: {context} is not container_ro_file_t/container_runtime_exec_t at s0")
        if "gpuslice" not in path:
            problems.append(f"{path}: not one of gpuslice's paths")
    return problems


def compile_module(policy_dir, out_dir):
    for tool in ("checkmodule", "semodule_package", "semodule_unpackage"):
        assert shutil.which(tool), f"{tool} is missing (scripts/install-deps.sh installs checkpolicy and semodule-utils)"
    mod, pp = os.path.join(out_dir, "gpuslice.mod"), os.path.join(out_dir, "gpuslice.pp")
    subprocess.run(["checkmodule", "-M", "-m", "-o", mod, os.path.join(policy_dir, "gpuslice.te")], check=True)
    subprocess.run(["semodule_package", "-o", pp, "-m", mod, "-f", os.path.join(policy_dir, "gpuslice.fc")], check=True)
    unpacked_mod, unpacked_fc = os.path.join(out_dir, "u.mod"), os.path.join(out_dir, "u.fc")
    subprocess.run(["semodule_unpackage", pp, unpacked_mod, unpacked_fc], check=True)
    with open(unpacked_fc) as a, open(os.path.join(policy_dir, "gpuslice.fc")) as b:
        assert a.read() == b.read(), "the packaged file contexts differ from gpuslice.fc"
    with open(mod, "rb") as a, open(unpacked_mod, "rb") as b:
        assert a.read() == b.read(), "the packaged module differs from the compiled one"
    return pp


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    policy_dir = os.path.join(source, "selinux", "policy")
    with tempfile.TemporaryDirectory() as out:
        pp = compile_module(policy_dir, out)
        assert os.path.getsize(pp) > 0
        # A broad module compiles too: the checks below are what refuse it.
        broad = os.path.join(out, "broad")
        os.mkdir(broad)
        with open(os.path.join(broad, "gpuslice.te"), "w") as f:
            f.write("module gpuslice 1.0;\nrequire { type container_t; attribute file_type; class file { read }; }\n"
                    "allow container_t file_type:file read;\n")
        shutil.copy(os.path.join(policy_dir, "gpuslice.fc"), broad)
        compile_module(broad, broad)
    for sample, why in [
        ("allow container_t file_type:file read;", "an attribute"),
        ("allow container_t xserver_misc_device_t:chr_file *;", "every permission"),
        ("allow container_t xserver_misc_device_t:chr_file ~{ relabelto };", "a complement"),
        ("allow container_t xserver_misc_device_t:chr_file { read relabelto };", "relabelto"),
        ("allow container_t device_node:chr_file { read write };", "every device node"),
        ("allow { container_t spc_t } xserver_misc_device_t:chr_file read;", "several sources"),
        ("allow container_domain xserver_misc_device_t:chr_file read;", "every container domain"),
        ("allow container_t xserver_misc_device_t:blk_file read;", "another class"),
        ("type_transition container_t var_run_t:sock_file container_file_t;", "a transition"),
        ("permissive container_t;", "a permissive domain"),
    ]:
        assert rule_problems(f"module gpuslice 1.0;\n{sample}\n"), f"the check does not catch {why}: {sample}"
    assert fc_problems("/ system_u:object_r:container_file_t:s0\n"), "the fc check does not catch a broad path"
    assert fc_problems("/usr/lib/gpuslice(/.*)? system_u:object_r:container_file_t:s0:c1,c2\n")

    with open(os.path.join(policy_dir, "gpuslice.te")) as f:
        te = f.read()
    with open(os.path.join(policy_dir, "gpuslice.fc")) as f:
        fc = f.read()
    problems = rule_problems(te) + fc_problems(fc)
    for p in problems:
        print("too broad:", p)
    assert not problems, f"{len(problems)} problem(s) in selinux/policy"
    assert re.search(r"^allow container_t xserver_misc_device_t:chr_file", strip_comments(te), re.M)
    print(f"selinux/policy: compiles ({os.path.basename(pp)}), {strip_comments(te).count('allow ')} allow rule(s), "
          "file contexts packaged, nothing broad")


if __name__ == "__main__":
    main()
