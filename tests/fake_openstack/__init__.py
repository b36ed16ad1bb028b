"""A fake OpenStack on loopback for the real `garm-provider-openstack` (see `server.py`)."""

from fake_openstack.boot import CloudInit, UserData
from fake_openstack.server import Cloud, FakeOpenStack, GlanceImage, Request, Server

__all__ = ["Cloud", "CloudInit", "FakeOpenStack", "GlanceImage", "Request", "Server", "UserData"]
