"""`ngramflow kafka up|down|status`: a local Kafka broker for queue-fed imports."""

import sys

from ngramflow.pipeline.flink.cli import report_status, report_stopped
from ngramflow.pipeline.kafka import provision
from ngramflow.pipeline.kafka.broker import DEFAULT_DIR, Broker


def _provision(args) -> int:
    def log(message):
        print(message, file=sys.stderr)

    print(f"broker: {provision.ensure_broker(log)}\nKafkaIO for the job server: {provision.ensure_connector(log)}\n"
          f"its expansion service: {provision.ensure_expansion_service(log)}")
    return 0


def _up(args) -> int:
    status = Broker(args.broker_dir).up()
    print(f"Kafka broker running: bootstrap {status['bootstrap']} (pid {status['pid']}), log {status['log']}\n"
          f"publish with: ngramflow corpus publish FILE... --to kafka://{status['bootstrap']}/TOPIC")
    return 0


def _down(args) -> int:
    return report_stopped(Broker(args.broker_dir).down(purge=args.purge))


def _status(args) -> int:
    return report_status(Broker(args.broker_dir).status(), args.json, "Kafka broker",
                         lambda status: status["bootstrap"])


def add_kafka_commands(sub) -> None:
    p = sub.add_parser("kafka", help="run a local Kafka broker (KRaft, one node) for queue-fed imports",
                       description="A local Apache Kafka broker (one JVM, KRaft mode, listening on 127.0.0.1 "
                                   "only) for 'ngramflow corpus publish' and 'ngramflow import --from-kafka'. "
                                   "Its jars come from Maven Central on first use.")
    commands = p.add_subparsers(dest="kafka_command", required=True, metavar="COMMAND")
    c = commands.add_parser("provision", help="assemble the broker's jars and Beam's KafkaIO (Maven) into the "
                                              "cache, once; up and imports from a queue do it on first use")
    c.set_defaults(handler=_provision)
    for name, handler, text in (("up", _up, "start the broker (again on the same ports and data after 'down')"),
                                ("down", _down, "stop the broker's process (by its recorded pid)"),
                                ("status", _status, "print the bootstrap address (HOST:PORT) of a running "
                                                    "broker; exit 3 if none runs")):
        c = commands.add_parser(name, help=text, description=text)
        c.add_argument("--broker-dir", default=DEFAULT_DIR, metavar="DIR",
                       help="the broker's configuration, data, log and pid (environment: NGRAMFLOW_KAFKA_BROKER; "
                            "default: %(default)s)")
        c.set_defaults(handler=handler)
        if name == "down":
            c.add_argument("--purge", action="store_true", help="also delete the broker's topics and folder")
        if name == "status":
            c.add_argument("--json", action="store_true", help="machine-readable output")
