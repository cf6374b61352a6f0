# Worker image for ngramflow on a Flink cluster (Beam portable runner).
#
# Beam's Python SDK container with our package installed, so that the SDK
# harness can load our transforms. Use it either as the DOCKER environment
#   --environment_type=DOCKER --environment_config=<registry>/ngramflow-worker:0.1.0
# or as a worker pool beside each TaskManager (EXTERNAL environment):
#   docker run --network=host <image> --worker_pool
#   ... --environment_type=EXTERNAL --environment_config=localhost:50000
# The SDK version must equal the job server's Beam version (2.62.0, see infra/).
#
# The wheel is built in a Rust stage: it carries the native parse kernel (native/, PyO3), built
# against Debian bookworm's Python 3.11, the same ABI and C library as the SDK image's.
# tests/test_install.py builds the wheel from what this stage copies.
FROM rust:1.85-slim-bookworm AS wheel
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-dev python3-venv \
    && python3 -m venv /opt/build && /opt/build/bin/pip install --no-cache-dir 'setuptools>=77' wheel 'setuptools-rust>=1.9'
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY ngramflow ./ngramflow
COPY pipeline ./pipeline
COPY transforms ./transforms
COPY schemas ./schemas
COPY corpus ./corpus
COPY query ./query
COPY infra/flink ./infra/flink
COPY infra/kafka ./infra/kafka
COPY native ./native
RUN /opt/build/bin/pip wheel --no-deps --no-build-isolation -w /dist .

FROM apache/beam_python3.11_sdk:2.62.0
COPY --from=wheel /dist /opt/ngramflow/dist
RUN pip install --no-cache-dir "$(ls /opt/ngramflow/dist/ngramflow-*.whl)[gcp,aws]" \
    && cd / && python -c "import ngramflow.pipeline.run, ngramflow.query.dataset, ngramflow.transforms.kernel, apache_beam; assert apache_beam.__version__ == '2.62.0'"

# The base image's entry point is Beam's boot binary (/opt/apache/beam/boot);
# keep it so `--worker_pool` and the SDK harness flags work unchanged.
