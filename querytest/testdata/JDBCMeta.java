import java.sql.*;

// JDBCMeta prints what pgjdbc's DatabaseMetaData and a transaction see, one fact a line; the
// querytest compares the lines.
public class JDBCMeta {
  public static void main(String[] args) throws Exception {
    try (Connection c = DriverManager.getConnection(args[0], "queryflux", "")) {
      DatabaseMetaData md = c.getMetaData();
      try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE"})) {
        while (rs.next()) System.out.println("table " + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME"));
      }
      try (ResultSet rs = md.getColumns(null, "public", "products", "%")) {
        while (rs.next()) System.out.println("column " + rs.getInt("ORDINAL_POSITION") + " " + rs.getString("COLUMN_NAME") + " "
            + rs.getString("TYPE_NAME") + " " + rs.getInt("DATA_TYPE"));
      }
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute("create table jdbc_probe(x integer)");
        s.execute("insert into jdbc_probe values (1)");
        c.rollback();
        try (ResultSet rs = s.executeQuery("select count(*) from information_schema.tables where table_name = 'jdbc_probe'")) {
          rs.next();
          System.out.println("after rollback " + rs.getLong(1));
        }
        c.commit();
        s.setFetchSize(100); // a portal read 100 rows at a time, with another statement in between
        long sum = 0;
        try (ResultSet rs = s.executeQuery("select range from range(1, 251)")) {
          for (int n = 1; rs.next(); n++) {
            sum += rs.getLong(1);
            if (n == 150) {
              try (Statement other = c.createStatement(); ResultSet r2 = other.executeQuery("select 1")) { r2.next(); }
            }
          }
        }
        System.out.println("fetched " + sum);
        c.commit();
      }
    }
  }
}
