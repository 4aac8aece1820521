package com.example.peer;

import java.io.Serializable;
import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/** A POJO with every kind of field the interop tests compare: scalars, a list, a map, an enum, a decimal. */
public class User implements Serializable {
    private static final long serialVersionUID = 1L;

    private String name;
    private int age;
    private double score;
    private List<String> tags;
    private Map<String, String> attrs;
    private Color color;
    private BigDecimal balance;

    public User() {}

    public User(String name, int age) {
        this.name = name;
        this.age = age;
    }

    public String getName() { return name; }
    public void setName(String name) { this.name = name; }
    public int getAge() { return age; }
    public void setAge(int age) { this.age = age; }
    public double getScore() { return score; }
    public void setScore(double score) { this.score = score; }
    public List<String> getTags() { return tags; }
    public void setTags(List<String> tags) { this.tags = tags; }
    public Map<String, String> getAttrs() { return attrs; }
    public void setAttrs(Map<String, String> attrs) { this.attrs = attrs; }
    public Color getColor() { return color; }
    public void setColor(Color color) { this.color = color; }
    public BigDecimal getBalance() { return balance; }
    public void setBalance(BigDecimal balance) { this.balance = balance; }

    @Override
    public String toString() {
        return "User{" + name + "," + age + "}";
    }
}
