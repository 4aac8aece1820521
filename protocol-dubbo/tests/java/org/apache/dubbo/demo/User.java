package org.apache.dubbo.demo;

import java.io.Serializable;
import java.util.Date;
import java.util.List;

/** A POJO the test provider sends and receives as a typed Hessian object. */
public class User implements Serializable {
    public String name;
    public int age;
    public List<String> tags;
    public Date created;
    public User friend;

    public User() {}

    public User(String name, int age) {
        this.name = name;
        this.age = age;
    }

    @Override
    public String toString() {
        return "User[" + name + "," + age + "," + tags + "," + (created == null ? null : created.getTime()) + "]";
    }
}
