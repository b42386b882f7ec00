package kafkars.ecosystem;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * kafka-clients producers and consumers: an idempotent producer read back by a classic-group
 * consumer, a transactional producer (commit and abort) read by read_committed and
 * read_uncommitted consumers, and a consumer of the new group protocol (KIP-848).
 *
 * <p>Usage: Clients BOOTSTRAP PREFIX. Prints one JSON line {step: result | {"error": ...}}.
 */
public final class Clients {
    static final Duration DEADLINE = Duration.ofSeconds(45);

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        Json.Steps steps = new Json.Steps();
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            steps.run("idempotent", () -> idempotent(admin, bootstrap, prefix + "-idem"));
            steps.run("transactions", () -> transactions(admin, bootstrap, prefix + "-txn"));
            steps.run(
                    "consumer_protocol",
                    () -> consumerProtocol(admin, bootstrap, prefix + "-kip848"));
            steps.run("compression", () -> compression(admin, bootstrap, prefix + "-codec"));
            for (String protocol : List.of("classic", "consumer")) {
                steps.run("rebalance_" + protocol,
                        () -> rebalance(admin, bootstrap, prefix + "-rebalance-" + protocol, protocol));
            }
            steps.run("consume_transform_produce",
                    () -> consumeTransformProduce(admin, bootstrap, prefix + "-ctp"));
        }
        steps.print();
    }

    static Properties producerProps(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        return p;
    }

    static Properties consumerProps(String bootstrap, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        return p;
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    /** Polls until `expected` records arrived or the deadline passed. */
    static List<ConsumerRecord<String, String>> pollAll(
            KafkaConsumer<String, String> consumer, int expected) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (records.size() < expected && System.nanoTime() < end) {
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
        }
        return records;
    }

    static Object idempotent(Admin admin, String bootstrap, String topic) throws Exception {
        createTopic(admin, topic, 3);
        int n = 5000;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + (i % 50), Integer.toString(i)));
            }
            producer.flush();
        }
        String group = topic + "-group";
        Properties props = consumerProps(bootstrap, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> records = pollAll(consumer, n);
            consumer.commitSync();
            Set<Integer> values = new TreeSet<>();
            // Per key (one partition each), the values come back in the order they were sent.
            Map<String, Integer> lastPerKey = new HashMap<>();
            boolean inOrder = true;
            for (ConsumerRecord<String, String> r : records) {
                int v = Integer.parseInt(r.value());
                values.add(v);
                Integer last = lastPerKey.put(r.key(), v);
                if (last != null && last >= v) inOrder = false;
            }
            Set<TopicPartition> parts = new TreeSet<>(
                    (a, b) -> Integer.compare(a.partition(), b.partition()));
            for (int p = 0; p < 3; p++) parts.add(new TopicPartition(topic, p));
            long committed = 0;
            for (OffsetAndMetadata o : consumer.committed(parts).values()) {
                if (o != null) committed += o.offset();
            }
            out.put("produced", n);
            out.put("consumed", records.size());
            out.put("distinct", values.size());
            out.put("in_order_per_key", inOrder);
            out.put("committed", committed);
        }
        return out;
    }

    static Object transactions(Admin admin, String bootstrap, String topic) throws Exception {
        createTopic(admin, topic, 2);
        Properties props = producerProps(bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-tid");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, "committed-" + i));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, "aborted-" + i));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 10; i < 15; i++) producer.send(new ProducerRecord<>(topic, "committed-" + i));
            producer.commitTransaction();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (String isolation : List.of("read_committed", "read_uncommitted")) {
            Properties cp = consumerProps(bootstrap, null);
            cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
                List<TopicPartition> parts =
                        List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
                consumer.assign(parts);
                consumer.seekToBeginning(parts);
                Map<TopicPartition, Long> ends = consumer.endOffsets(parts);
                List<String> values = new ArrayList<>();
                long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
                while (System.nanoTime() < end) {
                    consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                    boolean done = true;
                    for (TopicPartition tp : parts) {
                        if (consumer.position(tp) < ends.get(tp)) done = false;
                    }
                    if (done) break;
                }
                long endSum = ends.values().stream().mapToLong(Long::longValue).sum();
                Map<String, Object> seen = new LinkedHashMap<>();
                seen.put("count", values.size());
                seen.put("committed", values.stream().filter(v -> v.startsWith("committed-")).count());
                seen.put("aborted", values.stream().filter(v -> v.startsWith("aborted-")).count());
                // 25 records and 3 markers: end offsets are the same for both isolation levels
                // once no transaction is open.
                seen.put("end_offsets", endSum);
                out.put(isolation, seen);
            }
        }
        return out;
    }

    static Object consumerProtocol(Admin admin, String bootstrap, String topic) throws Exception {
        createTopic(admin, topic, 4);
        int n = 200;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            producer.flush();
        }
        String group = topic + "-group";
        Properties props = consumerProps(bootstrap, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> records = pollAll(consumer, n);
            consumer.commitSync();
            out.put("consumed", records.size());
            out.put("assigned", consumer.assignment().size());
            ConsumerGroupDescription d =
                    admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            out.put("type", d.type().toString());
            out.put("state", d.groupState().toString());
            out.put("members", d.members().size());
            long committed = 0;
            for (OffsetAndMetadata o :
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().values()) {
                committed += o.offset();
            }
            out.put("committed", committed);
        }
        return out;
    }

    static Object compression(Admin admin, String bootstrap, String topic) throws Exception {
        createTopic(admin, topic, 1);
        List<String> codecs = List.of("none", "gzip", "snappy", "lz4", "zstd");
        for (String codec : codecs) {
            Properties p = producerProps(bootstrap);
            p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                for (int i = 0; i < 200; i++) {
                    producer.send(new ProducerRecord<>(topic, codec, codec + "-" + i + "-" + "x".repeat(i)));
                }
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(bootstrap, null))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            List<ConsumerRecord<String, String>> records = pollAll(consumer, 1000);
            for (String codec : codecs) {
                long intact = 0;
                int i = 0;
                for (ConsumerRecord<String, String> r : records) {
                    if (!r.key().equals(codec)) continue;
                    if (r.value().equals(codec + "-" + i + "-" + "x".repeat(i))) intact++;
                    i++;
                }
                out.put(codec, intact);
            }
        }
        return out;
    }

    /** Two members share six partitions, then one leaves and the other takes all six. */
    static Object rebalance(Admin admin, String bootstrap, String topic, String protocol)
            throws Exception {
        createTopic(admin, topic, 6);
        String group = topic + "-group";
        Properties props = consumerProps(bootstrap, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        try (KafkaConsumer<String, String> a = new KafkaConsumer<>(props)) {
            a.subscribe(List.of(topic));
            pollUntil(List.of(a), () -> a.assignment().size() == 6);
            out.put("alone", a.assignment().size());
            try (KafkaConsumer<String, String> b = new KafkaConsumer<>(props)) {
                b.subscribe(List.of(topic));
                pollUntil(List.of(a, b),
                        () -> a.assignment().size() == 3 && b.assignment().size() == 3);
                out.put("shared", List.of(a.assignment().size(), b.assignment().size()));
                Set<TopicPartition> union = new java.util.HashSet<>(a.assignment());
                union.addAll(b.assignment());
                out.put("union", union.size());
            }
            pollUntil(List.of(a), () -> a.assignment().size() == 6);
            out.put("after_leave", a.assignment().size());
        }
        return out;
    }

    static void pollUntil(List<KafkaConsumer<String, String>> consumers,
            java.util.function.BooleanSupplier done) {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (!done.getAsBoolean() && System.nanoTime() < end) {
            for (KafkaConsumer<String, String> c : consumers) c.poll(Duration.ofMillis(50));
        }
    }

    /** Reads a topic and writes it upper-cased, offsets committed in the same transaction. */
    static Object consumeTransformProduce(Admin admin, String bootstrap, String topic)
            throws Exception {
        String output = topic + "-out";
        String group = topic + "-group";
        createTopic(admin, topic, 2);
        createTopic(admin, output, 2);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            for (int i = 0; i < 300; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
        }
        Properties cp = consumerProps(bootstrap, group);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Properties pp = producerProps(bootstrap);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-tid");
        int copied = 0;
        int transactions = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
                KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            producer.initTransactions();
            consumer.subscribe(List.of(topic));
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (copied < 300 && System.nanoTime() < end) {
                var records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                            new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                transactions++;
            }
        }
        long committed = 0;
        for (OffsetAndMetadata o :
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().values()) {
            committed += o.offset();
        }
        Properties rp = consumerProps(bootstrap, null);
        rp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Set<String> values = new TreeSet<>();
        try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(rp)) {
            List<TopicPartition> parts =
                    List.of(new TopicPartition(output, 0), new TopicPartition(output, 1));
            reader.assign(parts);
            reader.seekToBeginning(parts);
            for (ConsumerRecord<String, String> r : pollAll(reader, 300)) values.add(r.value());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("copied", copied);
        out.put("transactions_positive", transactions > 0);
        out.put("group_committed", committed);
        out.put("output_distinct", values.size());
        out.put("output_upper", values.stream().allMatch(v -> v.startsWith("V")));
        return out;
    }
}
