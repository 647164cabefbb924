"""Stand-in for Hermes 0.19.0's own tools/environments/docker.py.

Hermes' own docker backend: one container per task id under
``get_sandbox_dir()/"docker"/task_id/{home,workspace}``, shared by every gateway user. The
stand-in records that it was built and runs nothing: a test that sees it knows Berth stepped aside.
"""

import shutil
from typing import List

from tools.environments.base import BaseEnvironment, get_sandbox_dir

created: List["DockerEnvironment"] = []


def find_docker():
    return shutil.which("docker")


class DockerEnvironment(BaseEnvironment):
    def __init__(
        self,
        image: str,
        cwd: str = "/root",
        timeout: int = 60,
        cpu: float = 0,
        memory: int = 0,
        disk: int = 0,
        persistent_filesystem: bool = False,
        task_id: str = "default",
        volumes: list = None,
        forward_env: list = None,
        env: dict = None,
        network: bool = True,
        host_cwd: str = None,
        auto_mount_cwd: bool = False,
    ):
        super().__init__(cwd=cwd, timeout=timeout, env=env)
        self.image = image
        self.task_id = task_id
        self.layout = get_sandbox_dir() / "docker" / task_id
        created.append(self)

    def execute(self, command, cwd="", *, timeout=None, stdin_data=None, rewrite_compound_background=True,
                bounded_capture=False):
        return {"output": f"hermes-docker ran in the shared container of task {self.task_id}", "returncode": 0}

    def cleanup(self):
        pass
