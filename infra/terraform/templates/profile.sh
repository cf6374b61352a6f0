# Operator shells (an SSM session, then `sudo -iu flink`): the run's settings, ngramflow and
# Flink's command line tools.
set -a
. /etc/ngramflow/environment
set +a
PATH=/opt/ngramflow/venv/bin:/opt/flink/bin:$PATH
