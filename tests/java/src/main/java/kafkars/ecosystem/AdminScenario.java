package kafkars.ecosystem;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Admin client: topics, partitions, configs, consumer groups and their offsets, the
 * cluster, producers, transactions and log directories.
 *
 * <p>Usage: AdminScenario BOOTSTRAP PREFIX. Prints one JSON line {step: result | {"error"}}.
 */
public final class AdminScenario {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        String topic = prefix + "-topic";
        String data = prefix + "-data";
        String group = prefix + "-group";
        String txnId = prefix + "-txn";
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Json.Steps steps = new Json.Steps();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            steps.run("describe_cluster", () -> {
                DescribeClusterResult r = admin.describeCluster();
                Collection<Node> nodes = r.nodes().get();
                Node controller = r.controller().get();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("nodes", nodes.size());
                out.put("cluster_id_set", r.clusterId().get() != null);
                out.put("controller_is_a_node",
                        nodes.stream().anyMatch(n -> n.id() == controller.id()));
                return out;
            });
            steps.run("create_topics", () -> {
                admin.createTopics(List.of(
                                new NewTopic(topic, 2, (short) 1)
                                        .configs(Map.of("retention.ms", "86400000")),
                                new NewTopic(data, 1, (short) 1)))
                        .all().get();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("listed", admin.listTopics().names().get().containsAll(List.of(topic, data)));
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                out.put("partitions", d.partitions().size());
                out.put("replicas", d.partitions().get(0).replicas().size());
                return out;
            });
            steps.run("create_topic_exists", () -> {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                    return "created";
                } catch (java.util.concurrent.ExecutionException e) {
                    return e.getCause().getClass().getSimpleName();
                }
            });
            steps.run("create_partitions", () -> {
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
                // Kafka's brokers learn of the new partitions from the controller shortly after.
                long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                int n = 0;
                while (n != 4 && System.nanoTime() < end) {
                    n = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic)
                            .partitions().size();
                    if (n != 4) Thread.sleep(100);
                }
                return n;
            });
            steps.run("describe_configs", () -> {
                Config c = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                ConfigEntry e = c.get("retention.ms");
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("retention.ms", e.value());
                out.put("source", e.source().toString());
                out.put("cleanup.policy", c.get("cleanup.policy").value());
                out.put("cleanup.policy.source", c.get("cleanup.policy").source().toString());
                return out;
            });
            steps.run("incremental_alter_configs", () -> {
                admin.incrementalAlterConfigs(Map.of(resource, List.of(
                                new AlterConfigOp(new ConfigEntry("retention.ms", "12345"),
                                        AlterConfigOp.OpType.SET),
                                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                                        AlterConfigOp.OpType.APPEND))))
                        .all().get();
                Config set = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                admin.incrementalAlterConfigs(Map.of(resource, List.of(
                                new AlterConfigOp(new ConfigEntry("retention.ms", ""),
                                        AlterConfigOp.OpType.DELETE))))
                        .all().get();
                Config deleted = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("set", set.get("retention.ms").value());
                out.put("appended", set.get("cleanup.policy").value());
                out.put("deleted", deleted.get("retention.ms").value());
                out.put("deleted_source", deleted.get("retention.ms").source().toString());
                return out;
            });
            steps.run("produce", () -> {
                Properties p = Clients.producerProps(bootstrap);
                try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                    for (int i = 0; i < 10; i++) {
                        producer.send(new ProducerRecord<>(data, 0, "k" + i, "v" + i)).get();
                    }
                }
                return 10;
            });
            steps.run("consume_and_commit", () -> {
                Properties p = Clients.consumerProps(bootstrap, group);
                try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                    consumer.subscribe(List.of(data));
                    int n = Clients.pollAll(consumer, 10).size();
                    consumer.commitSync();
                    return n;
                }
            });
            TopicPartition tp = new TopicPartition(data, 0);
            steps.run("list_consumer_groups", () -> {
                for (ConsumerGroupListing l : admin.listConsumerGroups().all().get()) {
                    if (l.groupId().equals(group)) {
                        Map<String, Object> out = new LinkedHashMap<>();
                        out.put("state", String.valueOf(l.groupState().orElse(null)));
                        out.put("type", String.valueOf(l.type().orElse(null)));
                        out.put("simple", l.isSimpleConsumerGroup());
                        return out;
                    }
                }
                return "missing";
            });
            steps.run("describe_consumer_groups", () -> {
                ConsumerGroupDescription d =
                        admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("state", d.groupState().toString());
                out.put("type", d.type().toString());
                out.put("members", d.members().size());
                out.put("coordinator_set", d.coordinator() != null);
                return out;
            });
            steps.run("list_consumer_group_offsets", () -> offsets(admin, group));
            steps.run("alter_consumer_group_offsets", () -> {
                admin.alterConsumerGroupOffsets(group, Map.of(tp, new OffsetAndMetadata(3, "meta")))
                        .all().get();
                Map<TopicPartition, OffsetAndMetadata> o =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                return List.of(o.get(tp).offset(), o.get(tp).metadata());
            });
            steps.run("delete_consumer_group_offsets", () -> {
                admin.deleteConsumerGroupOffsets(group, Set.of(tp)).all().get();
                return offsets(admin, group);
            });
            steps.run("delete_consumer_groups", () -> {
                admin.deleteConsumerGroups(List.of(group)).all().get();
                List<String> left = new ArrayList<>();
                for (ConsumerGroupListing l : admin.listConsumerGroups().all().get()) {
                    if (l.groupId().equals(group)) left.add(l.groupId());
                }
                return left;
            });
            steps.run("describe_producers", () -> {
                List<ProducerState> states = admin.describeProducers(List.of(tp)).all().get()
                        .get(tp).activeProducers();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("producers", states.size());
                if (!states.isEmpty()) {
                    ProducerState s = states.get(0);
                    out.put("last_sequence", s.lastSequence());
                    out.put("epoch", s.producerEpoch());
                    out.put("current_txn_start", s.currentTransactionStartOffset().isPresent());
                }
                return out;
            });
            Properties tprops = Clients.producerProps(bootstrap);
            tprops.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(tprops)) {
                steps.run("transaction_open", () -> {
                    producer.initTransactions();
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(data, 0, "t", "open")).get();
                    return true;
                });
                steps.run("list_transactions", () -> {
                    for (TransactionListing l : admin.listTransactions().all().get()) {
                        if (l.transactionalId().equals(txnId)) return l.state().toString();
                    }
                    return "missing";
                });
                steps.run("describe_transactions_ongoing", () -> describeTxn(admin, txnId));
                steps.run("describe_producers_in_transaction", () -> {
                    List<ProducerState> states = admin.describeProducers(List.of(tp)).all().get()
                            .get(tp).activeProducers();
                    return states.stream()
                            .filter(s -> s.currentTransactionStartOffset().isPresent())
                            .map(s -> s.currentTransactionStartOffset().getAsLong())
                            .toList();
                });
                steps.run("describe_transactions_committed", () -> {
                    producer.commitTransaction();
                    // The markers are written after EndTxn answers: PrepareCommit until then.
                    long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
                    Map<String, Object> d = describeTxn(admin, txnId);
                    while (d.get("state").equals("PrepareCommit") && System.nanoTime() < end) {
                        Thread.sleep(100);
                        d = describeTxn(admin, txnId);
                    }
                    return d;
                });
            }
            steps.run("describe_log_dirs", () -> {
                int broker = admin.describeCluster().nodes().get().iterator().next().id();
                Map<String, LogDirDescription> dirs =
                        admin.describeLogDirs(List.of(broker)).allDescriptions().get().get(broker);
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("dirs", dirs.size());
                for (LogDirDescription d : dirs.values()) {
                    ReplicaInfo info = d.replicaInfos().get(tp);
                    if (info != null) {
                        out.put("data_size_positive", info.size() > 0);
                        out.put("is_future", info.isFuture());
                        out.put("error", d.error() == null ? null : d.error().toString());
                        out.put("total_bytes_known", d.totalBytes().isPresent());
                    }
                    ReplicaInfo other = d.replicaInfos().get(new TopicPartition(topic, 3));
                    if (other != null) out.put("new_partition_listed", true);
                }
                return out;
            });
            steps.run("delete_topics", () -> {
                admin.deleteTopics(List.of(topic, data)).all().get();
                long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                Set<String> names = admin.listTopics().names().get();
                while ((names.contains(topic) || names.contains(data)) && System.nanoTime() < end) {
                    Thread.sleep(100);
                    names = admin.listTopics().names().get();
                }
                return names.contains(topic) || names.contains(data) ? "still listed" : "deleted";
            });
        }
        steps.print();
    }

    static Map<String, Object> offsets(Admin admin, String group) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .forEach((k, v) -> out.put(
                        "partition-" + k.partition(), v == null ? null : v.offset()));
        return out;
    }

    static Map<String, Object> describeTxn(Admin admin, String txnId) throws Exception {
        TransactionDescription d =
                admin.describeTransactions(List.of(txnId)).all().get().get(txnId);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("state", d.state().toString());
        out.put("partitions", d.topicPartitions().stream().map(TopicPartition::partition).sorted().toList());
        out.put("timeout_ms", d.transactionTimeoutMs());
        out.put("start_time_set", d.transactionStartTimeMs().isPresent());
        return out;
    }
}
