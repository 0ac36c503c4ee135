// One login through the PostgreSQL JDBC driver: prints "ok VALUE" for select 40+2, or
// "error SQLSTATE MESSAGE".
// usage: java -cp postgresql.jar:. LoginProbe JDBC_URL USER PASSWORD
import java.sql.*;
import java.util.Properties;

public class LoginProbe {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        p.setProperty("password", args[2]);
        try (Connection c = DriverManager.getConnection(args[0], p);
             Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("select 40+2")) {
            rs.next();
            System.out.println("ok " + rs.getInt(1));
        } catch (SQLException e) {
            System.out.println("error " + e.getSQLState() + " " + e.getMessage());
        }
    }
}
