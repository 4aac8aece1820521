package hpeer;

import java.io.Serializable;
import java.util.Date;
import java.util.List;
import java.util.Map;

/** A plain POJO: two fields. */
class User implements Serializable {
    String name;
    int age;

    User() {}

    User(String name, int age) {
        this.name = name;
        this.age = age;
    }
}

/** A linked node, for shared references and cycles. */
class Node implements Serializable {
    String name;
    Node next;

    Node() {}

    Node(String name) {
        this.name = name;
    }
}

/** Every field kind a POJO can have. */
class Holder implements Serializable {
    short s;
    byte b;
    float f;
    char c;
    long l;
    double d;
    boolean z;
    Date when;
    byte[] data;
    int[] nums;
    String[] names;
    List<Object> list;
    Map<String, Object> map;
    Object any;
}

enum Color { RED, GREEN }

// Seventeen classes, so that the 17th instance needs the long `O` form.
class K0 implements Serializable { int v; }
class K1 implements Serializable { int v; }
class K2 implements Serializable { int v; }
class K3 implements Serializable { int v; }
class K4 implements Serializable { int v; }
class K5 implements Serializable { int v; }
class K6 implements Serializable { int v; }
class K7 implements Serializable { int v; }
class K8 implements Serializable { int v; }
class K9 implements Serializable { int v; }
class K10 implements Serializable { int v; }
class K11 implements Serializable { int v; }
class K12 implements Serializable { int v; }
class K13 implements Serializable { int v; }
class K14 implements Serializable { int v; }
class K15 implements Serializable { int v; }
class K16 implements Serializable { int v; }
