package kafkars.ecosystem;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * More of the Admin client: features, offsets by spec, deleteRecords, ACLs, client quotas,
 * SCRAM credentials, fencing producers, removing group members, listGroups, the metadata
 * quorum and leader elections.
 *
 * <p>Usage: AdminMore BOOTSTRAP PREFIX. Prints one JSON line {step: result | {"error"}}.
 */
public final class AdminMore {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        String topic = prefix + "-topic";
        String group = prefix + "-group";
        String user = prefix + "-user";
        TopicPartition tp = new TopicPartition(topic, 0);
        Json.Steps steps = new Json.Steps();
        steps.results.put("user", user);
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            steps.run("setup", () -> {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
                try (KafkaProducer<String, String> producer =
                        new KafkaProducer<>(Clients.producerProps(bootstrap))) {
                    long base = System.currentTimeMillis() - 60_000;
                    for (int i = 0; i < 10; i++) {
                        // Timestamps rise to offset 6 and fall after it: the largest is at 6.
                        long ts = base + (i <= 6 ? i : 12 - i) * 1000L;
                        producer.send(new ProducerRecord<>(topic, 0, ts, "k", "v" + i)).get();
                    }
                }
                return true;
            });
            steps.run("describe_features", () -> {
                FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
                Map<String, Object> out = new TreeMap<>();
                f.finalizedFeatures().forEach((k, v) -> out.put(k, v.maxVersionLevel()));
                Map<String, Object> result = new LinkedHashMap<>();
                result.put("finalized_names", new ArrayList<>(out.keySet()));
                result.put("supported_has_metadata_version",
                        f.supportedFeatures().containsKey("metadata.version"));
                result.put("epoch_present", f.finalizedFeaturesEpoch().isPresent());
                return result;
            });
            steps.run("list_offsets", () -> {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("earliest", offset(admin, tp, OffsetSpec.earliest()));
                out.put("latest", offset(admin, tp, OffsetSpec.latest()));
                out.put("max_timestamp", offset(admin, tp, OffsetSpec.maxTimestamp()));
                out.put("by_timestamp_0", offset(admin, tp, OffsetSpec.forTimestamp(0)));
                out.put("by_timestamp_future", offset(admin, tp,
                        OffsetSpec.forTimestamp(System.currentTimeMillis() + 3_600_000)));
                return out;
            });
            steps.run("delete_records", () -> {
                long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4)))
                        .lowWatermarks().get(tp).get().lowWatermark();
                return List.of(low, offset(admin, tp, OffsetSpec.earliest()));
            });
            steps.run("acls", () -> {
                ResourcePattern pattern =
                        new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL);
                AclBinding binding = new AclBinding(pattern, new AccessControlEntry(
                        "User:" + user, "*", AclOperation.WRITE, AclPermissionType.ALLOW));
                admin.createAcls(List.of(binding)).all().get();
                AclBindingFilter filter = new AclBindingFilter(
                        new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.ANY),
                        AccessControlEntryFilter.ANY);
                List<String> described = admin.describeAcls(filter).values().get().stream()
                        .map(b -> b.entry().principal() + " " + b.entry().operation() + " "
                                + b.entry().permissionType() + " " + b.pattern().patternType())
                        .toList();
                int deleted = admin.deleteAcls(List.of(filter)).all().get().size();
                int left = admin.describeAcls(filter).values().get().size();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("described", described);
                out.put("deleted", deleted);
                out.put("left", left);
                return out;
            });
            steps.run("client_quotas", () -> {
                ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user));
                admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                        new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                        new ClientQuotaAlteration.Op("request_percentage", 50.0)))))
                        .all().get();
                Map<String, Object> out = new TreeMap<>();
                long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (out.isEmpty() && System.nanoTime() < end) {
                    admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get()
                            .forEach((e, q) -> {
                                if (e.equals(entity)) out.putAll(q);
                            });
                    if (out.isEmpty()) Thread.sleep(100);
                }
                admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
                        new ClientQuotaAlteration.Op("producer_byte_rate", null),
                        new ClientQuotaAlteration.Op("request_percentage", null)))))
                        .all().get();
                return out;
            });
            steps.run("scram_credentials", () -> {
                admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "secret")))
                        .all().get();
                UserScramCredentialsDescription d = null;
                long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (System.nanoTime() < end) {
                    try {
                        d = admin.describeUserScramCredentials(List.of(user)).description(user).get();
                        break;
                    } catch (Exception e) {
                        Thread.sleep(100);
                    }
                }
                if (d == null) return "not described";
                return d.credentialInfos().stream()
                        .map(i -> i.mechanism() + "/" + i.iterations()).toList();
            });
            steps.run("fence_producers", () -> {
                String txnId = prefix + "-fenced";
                Properties p = Clients.producerProps(bootstrap);
                p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
                try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                    producer.initTransactions();
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(topic, 0, "k", "fenced")).get();
                    admin.fenceProducers(List.of(txnId)).all().get();
                    try {
                        producer.commitTransaction();
                        return "committed";
                    } catch (Exception e) {
                        return e.getClass().getSimpleName();
                    }
                }
            });
            steps.run("remove_members_from_consumer_group", () -> {
                Properties p = Clients.consumerProps(bootstrap, group);
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1");
                try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                    consumer.subscribe(List.of(topic));
                    long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                    while (consumer.assignment().isEmpty() && System.nanoTime() < end) {
                        consumer.poll(Duration.ofMillis(100));
                    }
                    int before = admin.describeConsumerGroups(List.of(group)).all().get()
                            .get(group).members().size();
                    admin.removeMembersFromConsumerGroup(group,
                            new RemoveMembersFromConsumerGroupOptions()).all().get();
                    int after = admin.describeConsumerGroups(List.of(group)).all().get()
                            .get(group).members().size();
                    return List.of(before, after);
                }
            });
            steps.run("list_groups", () -> {
                for (GroupListing l : admin.listGroups().all().get()) {
                    if (l.groupId().equals(group)) {
                        return List.of(String.valueOf(l.type().orElse(null)),
                                String.valueOf(l.protocol()),
                                String.valueOf(l.groupState().orElse(null)));
                    }
                }
                return "missing";
            });
            steps.run("describe_metadata_quorum", () -> {
                QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("leader_is_voter",
                        q.voters().stream().anyMatch(v -> v.replicaId() == q.leaderId()));
                out.put("voters", q.voters().size());
                out.put("high_watermark_positive", q.highWatermark() > 0);
                return out;
            });
            steps.run("elect_leaders", () -> {
                Map<TopicPartition, java.util.Optional<Throwable>> r =
                        admin.electLeaders(ElectionType.PREFERRED, java.util.Set.of(tp))
                                .partitions().get();
                return r.get(tp).map(t -> t.getClass().getSimpleName()).orElse("elected");
            });
            // No reassignment in progress: an empty list.
            steps.run("list_partition_reassignments",
                    () -> admin.listPartitionReassignments().reassignments().get().size());
        }
        steps.print();
    }

    static long offset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult r = admin.listOffsets(Map.of(tp, spec));
        return r.partitionResult(tp).get().offset();
    }
}
