package com.example.peer;

import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Date;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONWriter;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;

/**
 * Java values to and from the project's JSON mapping of Hessian values (hessian2 crate, to_json.rs):
 * objects are their fields plus "class", enums {"class", "name"}, BigDecimal/BigInteger {"class", "value"},
 * dates epoch milliseconds, byte[] base64, floats the double of their decimal text (as hessian-lite sends them),
 * NaN/infinities null.
 */
final class Json {
    private Json() {}

    /** Parses JSON text into fastjson2 values (JSONObject keeps key order). */
    static Object parse(String text) {
        return JSON.parse(text);
    }

    static String write(Object jsonValue) {
        return JSON.toJSONString(jsonValue, JSONWriter.Feature.WriteMapNullValue, JSONWriter.Feature.LargeObject);
    }

    /** A Java value as JSON (plain maps, lists, numbers, strings). */
    static Object out(Object v) {
        return out(v, 0);
    }

    private static Object out(Object v, int depth) {
        if (depth > 64) {
            return null;
        }
        if (v == null || v instanceof String || v instanceof Boolean) {
            return v;
        }
        if (v instanceof Character) {
            return v.toString();
        }
        if (v instanceof Float) {
            // hessian-lite's BasicSerializer sends a float as Double.parseDouble(String.valueOf(f)) (0.1f as 0.1,
            // not 0.10000000149011612): print the value the wire carries.
            float f = (Float) v;
            return Float.isFinite(f) ? (Object) Double.parseDouble(String.valueOf(f)) : null;
        }
        if (v instanceof Double) {
            double d = (Double) v;
            return Double.isFinite(d) ? (Object) d : null;
        }
        if (v instanceof Byte || v instanceof Short) {
            return ((Number) v).intValue();
        }
        if (v instanceof Integer || v instanceof Long) {
            return v;
        }
        if (v instanceof BigDecimal || v instanceof BigInteger) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("value", v.toString());
            m.put("class", v.getClass().getName());
            return m;
        }
        if (v instanceof Date) {
            return ((Date) v).getTime();
        }
        if (v instanceof byte[]) {
            return Base64.getEncoder().encodeToString((byte[]) v);
        }
        if (v instanceof Enum) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", ((Enum<?>) v).name());
            m.put("class", ((Enum<?>) v).getDeclaringClass().getName());
            return m;
        }
        if (v instanceof Message) {
            try {
                return JSON.parse(JsonFormat.printer().print((Message) v));
            } catch (Exception e) {
                return String.valueOf(v);
            }
        }
        if (v instanceof Collection) {
            List<Object> out = new ArrayList<>();
            for (Object o : (Collection<?>) v) {
                out.add(out(o, depth + 1));
            }
            return out;
        }
        if (v.getClass().isArray()) {
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < Array.getLength(v); i++) {
                out.add(out(Array.get(v, i), depth + 1));
            }
            return out;
        }
        if (v instanceof Map) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                Object k = e.getKey();
                out.put(k instanceof String ? (String) k : JSON.toJSONString(out(k, depth + 1)), out(e.getValue(), depth + 1));
            }
            return out;
        }
        if (v instanceof Number) {
            return v.toString();
        }
        // A POJO or an exception: its serializable fields, as Hessian's JavaSerializer writes them.
        Map<String, Object> out = new LinkedHashMap<>();
        for (Class<?> c = v.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                int mod = f.getModifiers();
                if (Modifier.isStatic(mod) || Modifier.isTransient(mod) || out.containsKey(f.getName())) {
                    continue;
                }
                if (v instanceof Throwable && c == Throwable.class) {
                    continue;
                }
                try {
                    f.setAccessible(true);
                    out.put(f.getName(), out(f.get(v), depth + 1));
                } catch (RuntimeException | IllegalAccessException e) {
                    // A JDK-internal field we may not read: leave it out.
                }
            }
        }
        out.put("class", v.getClass().getName());
        return out;
    }

    /** A JSON value (fastjson2) converted to Java type {@code t}. */
    static Object in(Object json, Type t) throws Exception {
        if (t instanceof ParameterizedType) {
            ParameterizedType p = (ParameterizedType) t;
            Class<?> raw = (Class<?>) p.getRawType();
            Type[] a = p.getActualTypeArguments();
            if (Collection.class.isAssignableFrom(raw) && json instanceof List) {
                Collection<Object> out = Set.class.isAssignableFrom(raw) ? new HashSet<>() : new ArrayList<>();
                for (Object o : (List<?>) json) {
                    out.add(in(o, a[0]));
                }
                return out;
            }
            if (Map.class.isAssignableFrom(raw) && json instanceof Map) {
                Map<Object, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) json).entrySet()) {
                    out.put(in(e.getKey(), a[0]), in(e.getValue(), a[1]));
                }
                return out;
            }
            return in(json, raw);
        }
        if (t instanceof GenericArrayType) {
            return in(json, Object[].class);
        }
        Class<?> c = t instanceof Class ? (Class<?>) t : Object.class;
        if (json == null) {
            if (c.isPrimitive()) {
                throw new IllegalArgumentException("null for primitive " + c.getName());
            }
            return null;
        }
        if (c == String.class) {
            return json instanceof String ? json : JSON.toJSONString(json);
        }
        if (c == int.class || c == Integer.class) {
            return num(json).intValue();
        }
        if (c == long.class || c == Long.class) {
            return num(json).longValue();
        }
        if (c == short.class || c == Short.class) {
            return num(json).shortValue();
        }
        if (c == byte.class || c == Byte.class) {
            return num(json).byteValue();
        }
        if (c == double.class || c == Double.class) {
            return num(json).doubleValue();
        }
        if (c == float.class || c == Float.class) {
            return num(json).floatValue();
        }
        if (c == boolean.class || c == Boolean.class) {
            return json instanceof Boolean ? json : Boolean.parseBoolean(json.toString());
        }
        if (c == char.class || c == Character.class) {
            return json.toString().charAt(0);
        }
        if (c == BigDecimal.class) {
            return new BigDecimal(scalar(json, "value"));
        }
        if (c == BigInteger.class) {
            return new BigInteger(scalar(json, "value"));
        }
        if (c == Date.class) {
            return new Date(num(json).longValue());
        }
        if (c == byte[].class) {
            if (json instanceof String) {
                return Base64.getDecoder().decode((String) json);
            }
        }
        if (c.isEnum()) {
            String name = scalar(json, "name");
            for (Object k : c.getEnumConstants()) {
                if (((Enum<?>) k).name().equals(name)) {
                    return k;
                }
            }
            throw new IllegalArgumentException("no constant " + name + " in " + c.getName());
        }
        if (Message.class.isAssignableFrom(c)) {
            Message.Builder b = (Message.Builder) c.getMethod("newBuilder").invoke(null);
            JsonFormat.parser().merge(JSON.toJSONString(json), b);
            return b.build();
        }
        if (c.isArray()) {
            List<?> l = (List<?>) json;
            Object arr = Array.newInstance(c.getComponentType(), l.size());
            for (int i = 0; i < l.size(); i++) {
                Array.set(arr, i, in(l.get(i), c.getComponentType()));
            }
            return arr;
        }
        if (json instanceof List) {
            return in(json, new ParamType(c == Object.class ? List.class : c, Object.class));
        }
        if (json instanceof Map) {
            Map<?, ?> m = (Map<?, ?>) json;
            Object cls = m.get("class");
            Class<?> target = c;
            if (cls instanceof String && (c == Object.class || c.isInterface() || Modifier.isAbstract(c.getModifiers()))) {
                target = Class.forName((String) cls, true, Json.class.getClassLoader());
                if (target != c && !Map.class.isAssignableFrom(target)) {
                    return in(json, target);
                }
            }
            if (Map.class.isAssignableFrom(c) || c == Object.class) {
                return in(json, new ParamType(Map.class, Object.class, Object.class));
            }
            return pojo(m, c);
        }
        if (c == Object.class) {
            if (json instanceof BigDecimal) {
                return ((BigDecimal) json).doubleValue();
            }
            return json;
        }
        throw new IllegalArgumentException("cannot convert " + json + " to " + c.getName());
    }

    private static Object pojo(Map<?, ?> m, Class<?> c) throws Exception {
        Constructor<?> ctor = c.getDeclaredConstructor();
        ctor.setAccessible(true);
        Object o = ctor.newInstance();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if ("class".equals(e.getKey())) {
                continue;
            }
            Field f = field(c, String.valueOf(e.getKey()));
            if (f == null) {
                throw new IllegalArgumentException("no field " + e.getKey() + " in " + c.getName());
            }
            f.setAccessible(true);
            f.set(o, in(e.getValue(), f.getGenericType()));
        }
        return o;
    }

    private static Field field(Class<?> c, String name) {
        for (; c != null; c = c.getSuperclass()) {
            try {
                return c.getDeclaredField(name);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        return null;
    }

    private static Number num(Object json) {
        if (json instanceof Number) {
            return (Number) json;
        }
        return new BigDecimal(scalar(json, "value"));
    }

    private static String scalar(Object json, String field) {
        if (json instanceof Map) {
            Object v = ((Map<?, ?>) json).get(field);
            if (v == null) {
                throw new IllegalArgumentException("object without \"" + field + "\": " + json);
            }
            return v.toString();
        }
        return json.toString();
    }

    /** A parameterized type built at run time (List<Object>, Map<Object, Object>). */
    private static final class ParamType implements ParameterizedType {
        private final Class<?> raw;
        private final Type[] args;

        ParamType(Class<?> raw, Type... args) {
            this.raw = raw;
            this.args = args;
        }

        @Override
        public Type[] getActualTypeArguments() {
            return args;
        }

        @Override
        public Type getRawType() {
            return raw;
        }

        @Override
        public Type getOwnerType() {
            return null;
        }
    }
}
