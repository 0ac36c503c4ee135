import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * PostgreSQL's JDBC driver running a statement whose capacity lease is lost: the SQLState the
 * application's retry logic reads (Spring maps class 40 to a concurrency failure and retries it),
 * then the connection's next statement. usage: java LeaseLost JDBC_URL SQL
 */
public class LeaseLost {
    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0]); Statement st = c.createStatement()) {
            System.out.println("case started: yes");
            try {
                st.execute(args[1]);
                System.out.println("case lost: none");
            } catch (SQLException e) {
                System.out.println("case lost: " + e.getSQLState() + " class " + e.getSQLState().substring(0, 2));
                System.out.println("message: " + e.getMessage());
            }
            try (ResultSet rs = st.executeQuery("select 40 + 2")) {
                rs.next();
                System.out.println("case after: " + rs.getInt(1));
            }
        }
    }
}
