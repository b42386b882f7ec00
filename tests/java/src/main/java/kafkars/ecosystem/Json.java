package kafkars.ecosystem;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** A tiny JSON writer and the steps' result map: each scenario prints one line of JSON. */
final class Json {
    private Json() {}

    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof Boolean || value instanceof Number) {
            out.append(value);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) out.append(',');
                first = false;
                string(out, String.valueOf(e.getKey()));
                out.append(':');
                write(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof Collection<?> items) {
            out.append('[');
            boolean first = true;
            for (Object item : items) {
                if (!first) out.append(',');
                first = false;
                write(out, item);
            }
            out.append(']');
        } else {
            string(out, value.toString());
        }
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        out.append('"');
    }

    /** Named steps, each a value or {"error": "..."}: one failing step does not hide the rest. */
    static final class Steps {
        final Map<String, Object> results = new LinkedHashMap<>();

        void run(String name, Callable<Object> step) {
            long start = System.nanoTime();
            try {
                results.put(name, step.call());
            } catch (Throwable t) {
                Throwable cause = t;
                while (cause.getCause() != null
                        && (cause instanceof java.util.concurrent.ExecutionException
                                || cause instanceof java.util.concurrent.CompletionException)) {
                    cause = cause.getCause();
                }
                Map<String, Object> error = new LinkedHashMap<>();
                error.put("error", cause.getClass().getName() + ": " + cause.getMessage());
                results.put(name, error);
            }
            System.err.printf("step %s: %d ms%n", name, (System.nanoTime() - start) / 1_000_000);
        }

        void print() {
            System.out.println(write(results));
            System.out.flush();
        }
    }
}
