# Worker image for ngramflow on a Flink cluster (Beam portable runner).
#
# Beam's Python SDK container with our package installed, so that the SDK
# harness can load our transforms. Use it either as the DOCKER environment
#   --environment_type=DOCKER --environment_config=<registry>/ngramflow-worker:0.1.0
# or as a worker pool beside each TaskManager (EXTERNAL environment):
#   docker run --network=host <image> --worker_pool
#   ... --environment_type=EXTERNAL --environment_config=localhost:50000
# The SDK version must equal the job server's Beam version (2.62.0, see infra/).
FROM apache/beam_python3.11_sdk:2.62.0

WORKDIR /opt/ngramflow
COPY pyproject.toml README.md ./
COPY ngramflow ./ngramflow
COPY pipeline ./pipeline
COPY transforms ./transforms
COPY schemas ./schemas
COPY corpus ./corpus
COPY query ./query
COPY infra/flink ./infra/flink
RUN pip install --no-cache-dir '.[gcp,aws]' \
    && cd / && python -c "import ngramflow.pipeline.run, ngramflow.query.dataset, apache_beam; assert apache_beam.__version__ == '2.62.0'"

# The base image's entry point is Beam's boot binary (/opt/apache/beam/boot);
# keep it so `--worker_pool` and the SDK harness flags work unchanged.
