"""The Docker Engine API over its Unix socket, standard library only: the tests' own view of the engine."""

from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import quote

LABEL_WORKSPACE = "dev.berth.workspace"


class Engine:
    """The Docker Engine API over its Unix socket, standard library only."""

    def __init__(self, path: str) -> None:
        self.path = path

    def request(self, method: str, url: str) -> tuple[int, Any]:
        class Connection(http.client.HTTPConnection):
            def connect(inner) -> None:  # noqa: N805 - `self` here is the Engine
                inner.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                inner.sock.settimeout(30)
                inner.sock.connect(self.path)

        connection = Connection("localhost")
        try:
            connection.request(method, url)
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(body) if body else None
        except ValueError:
            return response.status, body.decode("utf-8", "replace")

    def containers_under(self, folder: Path) -> list[dict]:
        """Berth's containers whose workspace lies under ``folder`` (this test's own sandbox root)."""
        filters = quote(json.dumps({"label": ["dev.berth.managed-by=berth"]}))
        status, containers = self.request("GET", f"/containers/json?all=1&filters={filters}")
        assert status == 200, containers
        return [c for c in containers if str(c["Labels"].get(LABEL_WORKSPACE, "")).startswith(os.fspath(folder) + "/")]

    def remove_under(self, folder: Path) -> None:
        for container in self.containers_under(folder):
            self.request("DELETE", f"/containers/{container['Id']}?force=1&v=1")
