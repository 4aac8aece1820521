"""Write, delete or read a Dubbo config-centre key in ZooKeeper with kazoo (a third-party client).

    python kazoo_rules.py HOST:PORT put PATH      # value from stdin
    python kazoo_rules.py HOST:PORT delete PATH
    python kazoo_rules.py HOST:PORT get PATH      # prints the value, exit 3 when missing

PATH is the full znode path, e.g. /dubbo/config/dubbo/com.foo.Svc::.condition-router
(Dubbo's ZookeeperDynamicConfiguration layout). Parents are created as needed.
"""
import sys

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError


def main():
    hosts, verb, path = sys.argv[1], sys.argv[2], sys.argv[3]
    zk = KazooClient(hosts=hosts, timeout=15)
    zk.start(timeout=15)
    try:
        if verb == "put":
            data = sys.stdin.buffer.read()
            if zk.exists(path):
                zk.set(path, data)
            else:
                zk.create(path, data, makepath=True)
        elif verb == "delete":
            try:
                zk.delete(path)
            except NoNodeError:
                pass
        elif verb == "get":
            try:
                data, _ = zk.get(path)
            except NoNodeError:
                sys.exit(3)
            sys.stdout.write(data.decode("utf-8"))
        else:
            sys.exit("unknown verb " + verb)
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    main()
