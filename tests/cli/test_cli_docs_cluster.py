"""docs/cluster.md's cluster runs as written: its commands, in order, on free ports, build a
controller and two brokers that the administrator logs in to, and that make delegation tokens."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE_PORTS = ("9092", "9093", "9094")


def _free_ports(count: int) -> list[str]:
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [str(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def test_the_cluster_of_docs_cluster_md_lets_the_admin_in_and_makes_tokens(tmp_path):
    section = (DOCS / "cluster.md").read_text(encoding="utf-8").split("## Running a cluster", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 2, "the cluster's start, then the administrator's commands"
    ports = dict(zip(PAGE_PORTS, _free_ports(len(PAGE_PORTS))))
    script = "\n".join([
        blocks[0],
        # The nodes are started in the background: wait for each to listen, as a reader would.
        *(f"for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.1; done"
          for port in PAGE_PORTS),
        "set -e",
        blocks[1],
    ])
    script = re.sub("|".join(PAGE_PORTS), lambda match: ports[match[0]], script)
    script = f"trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n{script}"
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    environment.pop("KAFKASEC_STATE", None)
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=environment, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in run.stdout
    assert "Created delegation token with tokenId" in run.stdout
