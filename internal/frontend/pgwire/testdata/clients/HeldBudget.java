import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * PostgreSQL's JDBC driver against a connection budget: statements prepared on the server
 * (prepareThreshold=1: named from their first execution) until one is refused, then the
 * connection's next statements. usage: java HeldBudget JDBC_URL SIZE
 */
public class HeldBudget {
    static String padded(int n, int size) {
        String head = "SELECT " + n + " /* ";
        return head + "x".repeat(size - head.length() - 3) + " */";
    }

    static int first(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    public static void main(String[] args) throws Exception {
        int size = Integer.parseInt(args[1]);
        try (Connection c = DriverManager.getConnection(args[0] + (args[0].contains("?") ? "&" : "?") + "prepareThreshold=1")) {
            List<PreparedStatement> kept = new ArrayList<>();
            int made = 0;
            String refused = "none";
            for (int i = 0; i < 10; i++) {
                PreparedStatement ps = c.prepareStatement(padded(i, size));
                try {
                    first(ps);
                    kept.add(ps);
                    made++;
                } catch (SQLException e) {
                    refused = e.getSQLState();
                    break;
                }
            }
            System.out.println("case budget: " + refused + " after " + made);
            int after;
            try (PreparedStatement ps = c.prepareStatement("select 40 + 2")) {
                after = first(ps);
            }
            System.out.println("case after: " + after + " " + first(kept.get(0)));
        }
    }
}
