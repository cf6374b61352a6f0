// Beam's Java expansion service on 127.0.0.1 only, for the cross-language KafkaIO of `import --from-kafka`.
// Compiled once (pipeline/kafka/provision.py), run as java -cp JARS LoopbackExpansionService PORT OPTIONS...:
// Beam's own ExpansionService main binds every interface, and the Flink job server's built-in one takes no
// options. Like the job server's entry point, it exits when its standard input (a pipe from the import that
// started it) ends, so it does not outlive that import even when it is killed.
import java.util.Arrays;
import org.apache.beam.sdk.expansion.service.ExpansionServer;
import org.apache.beam.sdk.expansion.service.ExpansionService;
import org.apache.beam.sdk.options.PipelineOptionsFactory;

public class LoopbackExpansionService {
  public static void main(String[] args) throws Exception {
    org.ngramflow.flink.StableUidJobServer.exitWithStandardInput();
    int port = Integer.parseInt(args[0]);
    ExpansionService service =
        new ExpansionService(PipelineOptionsFactory.fromArgs(Arrays.copyOfRange(args, 1, args.length)).create());
    try (ExpansionServer server = ExpansionServer.create(service, "127.0.0.1", port)) {
      System.out.println("expansion service listening on 127.0.0.1:" + server.getPort());
      Thread.currentThread().join();
    }
  }
}
