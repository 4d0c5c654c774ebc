#!/usr/bin/env python3
"""Root integration test: `gpuslice configure containerd` against the real
containerd (Debian's 1.6, installed by CI; a version 3 config against
Debian unstable's containerd 2.x, fetched once).

Why a real containerd: what matters is what containerd makes of the files, not
what we think it makes of them. In particular containerd before 2.1 replaces a
plugin's whole table when it merges an imported file, so a drop-in that only
declared the gpuslice handler would silently drop the user's runc settings
(SystemdCgroup), sandbox image and registry config; `containerd config dump`
shows the merged result. The daemon test then starts containerd on that config
with its own root, state and socket under a temp dir (no interference with a
system containerd) and checks that the CRI plugin loaded.

Usage: test_containerd_config.py  (GPUSLICE_BIN = path of the gpuslice binary)
Written with unittest so that it runs without pytest; pytest runs it too.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import tomllib  # Python 3.11 (Debian 12)
except ImportError:  # Python 3.10 (Ubuntu 22.04): apt-get install python3-tomli
    import tomli as tomllib

GPUSLICE = os.environ.get("GPUSLICE_BIN", "gpuslice")
# the build's compiled-in <bindir>/gpuslice-runtime (cmake/InstallPaths.cmake)
RUNTIME_PATH = os.environ.get("GPUSLICE_INSTALLED_RUNTIME", "/usr/bin/gpuslice-runtime")
CONTAINERD = shutil.which("containerd") or "/usr/bin/containerd"
CTR = shutil.which("ctr") or "/usr/bin/ctr"
CRI_V2 = "io.containerd.grpc.v1.cri"
ANNOTATIONS = ["cdi.k8s.io/*", "gpuslice.io/*"]

MAIN_V2 = """\
# a user's config: comments and order must survive
version = 2
imports = ["{dir}/site.d/*.toml"]
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["https://mirror.example"]
"""

# containerd 2.x's own layout: the CRI plugin split in three, the sandbox
# image pinned in the images plugin, its own CDI on.
MAIN_V3 = """\
# a containerd 2 config
version = 3
imports = ["{dir}/site.d/*.toml"]

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "native"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "registry.example/pause:3.10"

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = true
"""

MAIN_V1 = """\
[plugins.cri]
  sandbox_image = "registry.example/pause:3.6"
  [plugins.cri.containerd]
    default_runtime_name = "runc"
    [plugins.cri.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.cri.containerd.runtimes.runc.options]
        SystemdCgroup = true
"""


def run(*args, check=True):
    proc = subprocess.run(list(args), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def gpuslice(config, *extra):
    return run(GPUSLICE, "configure", "containerd", "--config", config, *extra).stdout


def dump(config, containerd=CONTAINERD):
    """containerd's merged view of a config and its imports."""
    return tomllib.loads(run(containerd, "--config", config, "config", "dump").stdout)


def containerd_release(label):
    """Bin dir of another containerd release (tests/integration/ctrd.py)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ctrd
    return ctrd.release_bin_dir(label)


def cri(dumped):
    return dumped["plugins"][CRI_V2]


class ConfigureContainerd(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpuslice-ctd-it-")
        self.config = os.path.join(self.dir, "config.toml")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def assert_handler(self, plugin, systemd_cgroup):
        handler = plugin["containerd"]["runtimes"]["gpuslice"]
        self.assertEqual(handler["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(handler["options"]["BinaryName"], RUNTIME_PATH)
        self.assertEqual(handler["options"].get("SystemdCgroup", False), systemd_cgroup)
        self.assertEqual(handler["container_annotations"], ANNOTATIONS)
        # pod annotations are written by pod authors: never a device request
        self.assertEqual(handler.get("pod_annotations", []), [])

    def test_version2_drop_in_keeps_user_settings(self):
        os.mkdir(os.path.join(self.dir, "site.d"))
        original = MAIN_V2.format(dir=self.dir)
        with open(self.config, "w") as f:
            f.write(original)
        before = cri(dump(self.config))
        self.assertNotIn("gpuslice", before["containerd"]["runtimes"])

        out = gpuslice(self.config)
        self.assertIn("restart containerd", out)
        merged = dump(self.config)
        plugin = cri(merged)
        self.assert_handler(plugin, systemd_cgroup=True)
        # Everything the user had in the CRI table is still in effect.
        self.assertEqual(plugin["sandbox_image"], "registry.example/pause:3.9")
        self.assertEqual(plugin["containerd"]["snapshotter"], "native")
        self.assertTrue(plugin["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"])
        self.assertEqual(plugin["registry"]["mirrors"]["docker.io"]["endpoint"], ["https://mirror.example"])
        self.assertEqual(plugin["containerd"]["default_runtime_name"], "runc")
        drop_in = os.path.join(self.dir, "conf.d", "99-gpuslice.toml")
        self.assertIn(drop_in, merged["imports"])

        # Idempotent, then --set-as-default, then --remove restores the bytes.
        self.assertIn("nothing to change", gpuslice(self.config))
        gpuslice(self.config, "--set-as-default")
        self.assertEqual(cri(dump(self.config))["containerd"]["default_runtime_name"], "gpuslice")
        gpuslice(self.config, "--remove")
        with open(self.config) as f:
            self.assertEqual(f.read(), original)
        self.assertFalse(os.path.exists(drop_in))
        self.assertFalse(os.path.exists(self.config + ".gpuslice.bak"))
        self.assertEqual(cri(dump(self.config)), before)

    def test_a_drop_in_with_only_the_handler_would_lose_settings(self):
        """The reason the drop-in carries the whole table, shown on this containerd."""
        os.mkdir(os.path.join(self.dir, "site.d"))
        with open(self.config, "w") as f:
            f.write(MAIN_V2.format(dir=self.dir))
        with open(os.path.join(self.dir, "site.d", "handler-only.toml"), "w") as f:
            f.write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.x]\n'
                    '  runtime_type = "io.containerd.runc.v2"\n')
        plugin = cri(dump(self.config))
        if plugin["sandbox_image"] == "registry.example/pause:3.9":
            self.skipTest("this containerd deep-merges imports (2.1+)")
        self.assertNotIn("runc", plugin["containerd"]["runtimes"])

    def test_version3_with_containerd_2(self):
        """containerd 2.x (Debian unstable's, fetched once) merges the drop-in
        into io.containerd.cri.v1.runtime; its own settings (enable_cdi, the
        pinned sandbox image, runc's SystemdCgroup) are left as they were."""
        containerd2 = str(containerd_release("2") / "containerd")
        os.mkdir(os.path.join(self.dir, "site.d"))
        with open(self.config, "w") as f:
            f.write(MAIN_V3.format(dir=self.dir))
        out = gpuslice(self.config)
        self.assertIn("containerd's own CDI is on (enable_cdi = true), left as it is", out)
        dumped = dump(self.config, containerd2)
        self.assertEqual(dumped["version"], 3)
        runtime = dumped["plugins"]["io.containerd.cri.v1.runtime"]
        self.assert_handler(runtime, systemd_cgroup=True)
        self.assertTrue(runtime["enable_cdi"])
        self.assertTrue(runtime["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"])
        self.assertEqual(dumped["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"],
                         "registry.example/pause:3.10")
        gpuslice(self.config, "--remove")
        with open(self.config) as f:
            self.assertEqual(f.read(), MAIN_V3.format(dir=self.dir))
        self.assertNotIn("gpuslice", dump(self.config, containerd2)["plugins"]["io.containerd.cri.v1.runtime"]
                         ["containerd"]["runtimes"])

    def test_version1_block_in_main_file(self):
        with open(self.config, "w") as f:
            f.write(MAIN_V1)
        gpuslice(self.config, "--set-as-default")
        plugin = cri(dump(self.config))
        self.assert_handler(plugin, systemd_cgroup=True)
        self.assertEqual(plugin["containerd"]["default_runtime_name"], "gpuslice")
        self.assertEqual(plugin["sandbox_image"], "registry.example/pause:3.6")
        gpuslice(self.config, "--remove")
        with open(self.config) as f:
            self.assertEqual(f.read(), MAIN_V1)

    def test_missing_config_keeps_default_runc(self):
        dry = gpuslice(self.config, "--dry-run")
        self.assertIn("would write drop-in", dry)
        self.assertEqual(os.listdir(self.dir), [])
        gpuslice(self.config)
        plugin = cri(dump(self.config))
        self.assert_handler(plugin, systemd_cgroup=False)
        self.assertEqual(plugin["containerd"]["runtimes"]["runc"]["runtime_type"], "io.containerd.runc.v2")
        self.assertEqual(plugin["containerd"]["default_runtime_name"], "runc")
        gpuslice(self.config, "--remove")
        self.assertFalse(os.path.exists(self.config))

    def test_daemon_loads_cri_with_the_config(self):
        os.mkdir(os.path.join(self.dir, "site.d"))
        with open(self.config, "w") as f:
            f.write(MAIN_V2.format(dir=self.dir))
            # Keep the daemon's files under the temp dir.
            f.write(f'\n[grpc]\n  address = "{self.dir}/containerd.sock"\n')
        gpuslice(self.config)
        sock = os.path.join(self.dir, "containerd.sock")
        log_path = os.path.join(self.dir, "containerd.log")
        with open(log_path, "w") as log:
            daemon = subprocess.Popen(
                [CONTAINERD, "--config", self.config, "--root", os.path.join(self.dir, "root"),
                 "--state", os.path.join(self.dir, "state"), "--address", sock],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 30
            while not os.path.exists(sock) and time.time() < deadline and daemon.poll() is None:
                time.sleep(0.1)
            with open(log_path) as f:
                log_text = f.read()
            self.assertTrue(os.path.exists(sock), f"containerd did not start:\n{log_text}")
            plugins, cri_lines = "", []
            while not cri_lines and time.time() < deadline:
                plugins = run(CTR, "--address", sock, "plugins", "ls", check=False).stdout
                cri_lines = [l for l in plugins.splitlines() if l.split()[:2] == ["io.containerd.grpc.v1", "cri"]]
                if not cri_lines:
                    time.sleep(0.2)
            with open(log_path) as f:
                log_text = f.read()
            self.assertEqual(len(cri_lines), 1, f"{plugins}\n{log_text}")
            self.assertEqual(cri_lines[0].split()[-1], "ok", f"{plugins}\n{log_text}")
            self.assertNotIn("failed to load plugin io.containerd.grpc.v1.cri", log_text)
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
