package org.ngramflow.flink;

import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.beam.runners.flink.FlinkJobServerDriver;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.util.construction.resources.PipelineResources;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.java.ExecutionEnvironment;
import org.apache.flink.api.java.RemoteEnvironmentConfigUtils;
import org.apache.flink.configuration.ConfigUtils;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.transformations.PhysicalTransformation;

/**
 * Beam's Flink job server (FlinkJobServerDriver) whose streaming jobs give every operator a uid that depends
 * only on the job's shape, so a resubmitted job maps every piece of a checkpoint's state.
 *
 * <p>Why: Flink files a checkpoint's state under operator ids. Beam 2.62 gives most operators a uid (its
 * transform's name) but not all: the ToKeyedWorkItem in front of each GroupByKey has none, and Flink then
 * derives its id from the operator's place in the order the job graph was built, and from the order of its
 * inputs. Beam's fuser decides which fused stage feeds which input of a Flatten, and which output of a stage
 * is its main one, by iterating hash sets of protobuf messages whose hash codes include identity hash codes,
 * and those differ between JVM processes. Unaligned checkpoints keep the data in flight with exactly these
 * operators, so a job resumed by another job server could fail with "Cannot map checkpoint/savepoint state
 * for operator ...".
 *
 * <p>How: Beam asks Flink for the "context" streaming environment when its master is {@code [auto]}. This
 * driver takes the real master ({@code [local]} or host:port) from {@code --flink-master}, hands Beam
 * {@code [auto]} instead, and installs a context environment that submits to the real master after naming
 * each uid-less operator (see StableUids). Batch jobs keep no state across submissions; on a cluster they
 * take a context environment of this driver's too (BatchContext), for the jars below; on the embedded one
 * they name {@code [local]} in their pipeline options ({@code --flink_master}), which Beam prefers to its
 * server's, and Beam makes its own.
 *
 * <p>The jars: a job takes this JVM's classpath (Beam's runner, and the connectors' jars the import added)
 * to the cluster, about 230 MB that Flink's REST endpoint and BLOB server took 16-22 s to receive and store
 * before each job began. With {@code --jars-on-this-machine} (the cluster's TaskManagers and JobManager
 * read this machine's disk: ngramflow's own session cluster) nothing is uploaded; the job names the jars
 * by their paths here (Flink's pipeline.classpaths), and the cluster loads them from there, with the same
 * class loader as uploaded ones. Arguments are otherwise FlinkJobServerDriver's.
 *
 * <p>Also: the JVM exits when the import that started it is gone (exitWithStandardInput).
 */
public final class StableUidJobServer {
  private static final String MASTER = "--flink-master=";
  private static final String CONF_DIR = "--flink-conf-dir=";
  private static final String JARS_ON_THIS_MACHINE = "--jars-on-this-machine";
  private static final String LOCAL = "[local]";

  private StableUidJobServer() {}

  public static void main(String[] args) throws Exception {
    String master = null;
    String confDir = null;
    boolean jarsOnThisMachine = false;
    List<String> driverArgs = new ArrayList<>();
    for (String arg : args) {
      if (arg.equals(JARS_ON_THIS_MACHINE)) {
        jarsOnThisMachine = true;
        continue;
      }
      if (arg.startsWith(MASTER)) {
        master = arg.substring(MASTER.length());
        arg = MASTER + "[auto]";
      } else if (arg.startsWith(CONF_DIR)) {
        confDir = arg.substring(CONF_DIR.length());
      }
      driverArgs.add(arg);
    }
    if (master == null || confDir == null) {
      throw new IllegalArgumentException("usage: " + MASTER + "[local]|HOST:PORT " + CONF_DIR + "DIR ...");
    }
    exitWithStandardInput();
    Target target = new Target(master, GlobalConfiguration.loadConfiguration(confDir), jarsOnThisMachine);
    StableUidStreamEnvironment.install(target);
    if (!target.local) {
      BatchContext.install(target);
    }
    FlinkJobServerDriver.main(driverArgs.toArray(new String[0]));
  }

  /**
   * Ends this JVM when its standard input ends: it is a pipe from the import that started it
   * (pipeline/flink/jvm.py), closed by the kernel when that process dies, even by SIGKILL.
   */
  public static void exitWithStandardInput() {
    Thread watch = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // nothing is sent: the pipe only ends
        }
      } catch (java.io.IOException e) {
        // a broken pipe ends it too
      }
      System.err.println("ngramflow: the import that started this job server is gone; exiting");
      System.exit(1);
    }, "exit-with-standard-input");
    watch.setDaemon(true);
    watch.start();
  }

  /** Where jobs go: the embedded cluster of this process, or a cluster's REST endpoint. */
  static final class Target {
    final boolean local;
    final String host;
    final int port;
    private final Configuration base;
    private final boolean jarsOnThisMachine;

    Target(String master, Configuration base, boolean jarsOnThisMachine) {
      this.base = base;
      this.jarsOnThisMachine = jarsOnThisMachine;
      this.local = LOCAL.equals(master);
      String address = master.replaceFirst("^https?://", "");
      int colon = address.lastIndexOf(':');
      this.host = local ? null : (colon < 0 ? address : address.substring(0, colon));
      this.port = local || colon < 0 ? base.get(RestOptions.PORT) : Integer.parseInt(address.substring(colon + 1));
    }

    /** The Flink configuration of one job: the configuration folder's, then what Flink passed in, then where
     * it goes: the embedded cluster, or the cluster's address and the job's jars, as Flink's remote
     * environments set them (environments are made from it: Flink refuses to make a remote one while a
     * context environment is installed). */
    Configuration configuration(Configuration given) {
      Configuration conf = new Configuration(base);
      conf.addAll(given);
      if (local) {
        conf.set(DeploymentOptions.TARGET, "local");
        // As Beam's own [local] environments do (https://github.com/apache/beam/issues/20783).
        if (!conf.contains(CoreOptions.CHECK_LEAKED_CLASSLOADER)) {
          conf.set(CoreOptions.CHECK_LEAKED_CLASSLOADER, false);
        }
      } else {
        RemoteEnvironmentConfigUtils.setJobManagerAddressToConfig(host, port, conf);
        RemoteEnvironmentConfigUtils.setJarURLsToConfig(jarsOnThisMachine ? new String[0] : classpath(), conf);
        if (jarsOnThisMachine) {
          ConfigUtils.encodeCollectionToConfig(conf, PipelineOptions.CLASSPATHS, classpathURLs(), URL::toString);
        }
        conf.set(DeploymentOptions.TARGET, "remote");
      }
      conf.set(DeploymentOptions.ATTACHED, true);
      return conf;
    }

    /** The jars a job runs with: this process's classpath, as Beam's own remote environments. */
    private static String[] classpath() {
      return PipelineResources.detectClassPathResourcesToStage(
              StableUidJobServer.class.getClassLoader(), PipelineOptionsFactory.create())
          .toArray(new String[0]);
    }

    /** classpath() as file URLs, which a cluster on this machine loads the classes from. */
    private static List<URL> classpathURLs() {
      List<URL> urls = new ArrayList<>();
      for (String jar : classpath()) {
        try {
          urls.add(new File(jar).toURI().toURL());
        } catch (MalformedURLException e) {
          throw new IllegalStateException("a jar of the job server's classpath has no file URL: " + jar, e);
        }
      }
      return urls;
    }
  }

  /** Streaming jobs' environment, the embedded cluster's or a remote one's (not a LocalStreamEnvironment:
   * Beam would replace it); a resumed job's checkpoint is in the configuration (execution.savepoint.path). */
  static final class StableUidStreamEnvironment extends StreamExecutionEnvironment {
    StableUidStreamEnvironment(Configuration conf) {
      super(conf);
    }

    static void install(Target target) {
      initializeContextEnvironment(given -> new StableUidStreamEnvironment(target.configuration(given)));
    }

    @Override
    public StreamGraph getStreamGraph(boolean clearTransformations) {
      StableUids.assign(getTransformations());
      return super.getStreamGraph(clearTransformations);
    }
  }

  /** Batch jobs' environment on a cluster (Beam's, for a master of {@code [auto]}): the cluster's, with the
   * configuration folder's settings, as Beam's own remote one for host:port. */
  static final class BatchContext extends ExecutionEnvironment {
    private BatchContext(Configuration conf) {
      super(conf);
    }

    static void install(Target target) {
      initializeContextEnvironment(() -> new BatchContext(target.configuration(new Configuration())));
    }
  }

  /**
   * Uids for the operators Beam left without one, from the shape of the job around each.
   *
   * <p>Only operators ("physical" transformations) count as neighbours: unions, partitionings and side
   * outputs are looked through, because which output of a fused stage is its main one, and so where Flink
   * puts a side output, also follows Beam's hash-set order. Each operator's shape is its name and, order-free,
   * the uids (or recursively the shapes) of the operators upstream and downstream of it.
   */
  static final class StableUids {
    private final Map<Transformation<?>, List<Transformation<?>>> inputs = new IdentityHashMap<>();
    private final Map<Transformation<?>, List<Transformation<?>>> consumers = new IdentityHashMap<>();
    private final Map<Transformation<?>, String> upstream = new IdentityHashMap<>();
    private final Map<Transformation<?>, String> downstream = new IdentityHashMap<>();

    static void assign(Collection<Transformation<?>> roots) {
      new StableUids().assignAll(roots);
    }

    private void assignAll(Collection<Transformation<?>> roots) {
      List<Transformation<?>> operators = operators(roots);
      // All shapes first: a shape must not see the uids given below.
      Map<Transformation<?>, String> shapes = new IdentityHashMap<>();
      Set<String> taken = new HashSet<>();
      for (Transformation<?> t : operators) {
        if (t.getUid() == null) {
          shapes.put(t, digest(List.of(shape(t, upstream, inputs), shape(t, downstream, consumers))));
        } else {
          taken.add(t.getUid());
        }
      }
      // Creation order decides only between operators whose surroundings are identical.
      operators.sort(Comparator.comparingInt(Transformation::getId));
      Map<String, Integer> repeats = new HashMap<>();
      for (Transformation<?> t : operators) {
        String shape = shapes.get(t);
        if (shape == null) {
          continue;
        }
        String uid = "ngramflow:" + t.getName() + ":" + shape.substring(0, 16);
        int repeat = repeats.merge(uid, 1, Integer::sum);
        if (repeat > 1) {
          uid += "#" + repeat;
        }
        if (!taken.add(uid)) {
          throw new IllegalStateException("operator uid " + uid + " is taken");
        }
        t.setUid(uid);
      }
    }

    /** Every operator reachable from the roots, with the operators each one reads from and feeds. */
    private List<Transformation<?>> operators(Collection<Transformation<?>> roots) {
      List<Transformation<?>> operators = new ArrayList<>();
      Set<Transformation<?>> seen = Collections.newSetFromMap(new IdentityHashMap<>());
      List<Transformation<?>> pending = new ArrayList<>(roots);
      while (!pending.isEmpty()) {
        Transformation<?> t = pending.remove(pending.size() - 1);
        if (seen.add(t)) {
          pending.addAll(t.getInputs());
          if (t instanceof PhysicalTransformation) {
            operators.add(t);
            List<Transformation<?>> sources = new ArrayList<>();
            operatorsUpstream(t.getInputs(), sources);
            inputs.put(t, sources);
            for (Transformation<?> source : sources) {
              consumers.computeIfAbsent(source, x -> new ArrayList<>()).add(t);
            }
          }
        }
      }
      return operators;
    }

    private static void operatorsUpstream(List<Transformation<?>> from, List<Transformation<?>> found) {
      for (Transformation<?> t : from) {
        if (t instanceof PhysicalTransformation) {
          found.add(t);
        } else {
          operatorsUpstream(t.getInputs(), found);
        }
      }
    }

    /** An operator's uid if it has one, else a digest of its name and its neighbours' shapes, one way. */
    private static String shape(Transformation<?> t, Map<Transformation<?>, String> memo,
        Map<Transformation<?>, List<Transformation<?>>> neighbours) {
      String known = memo.get(t);
      if (known != null) {
        return known;
      }
      String result;
      if (t.getUid() != null) {
        result = "uid:" + t.getUid();
      } else {
        List<String> parts = new ArrayList<>();
        for (Transformation<?> n : neighbours.getOrDefault(t, List.of())) {
          parts.add(shape(n, memo, neighbours));
        }
        parts.sort(null);
        parts.add(0, "name:" + t.getName());
        result = digest(parts);
      }
      memo.put(t, result);
      return result;
    }

    private static String digest(List<String> parts) {
      try {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (String part : parts) {
          sha.update(part.getBytes(StandardCharsets.UTF_8));
          sha.update((byte) 0);
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : sha.digest()) {
          hex.append(String.format("%02x", b));
        }
        return hex.toString();
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
