package oracle.pojo;

import java.io.Serializable;

/** A node that can point at itself (a cycle) for the Hessian operations. */
public class Node implements Serializable {
    private static final long serialVersionUID = 1L;
    public Object value;
    public Node next;
}
