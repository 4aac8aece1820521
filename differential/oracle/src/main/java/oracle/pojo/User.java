package oracle.pojo;

import java.io.Serializable;

/** A plain POJO for the Hessian operations. */
public class User implements Serializable {
    private static final long serialVersionUID = 1L;
    public String name;
    public int age;
    public Object tag;
}
