import java.sql.*;
import java.util.*;

/** DatabaseMetaData through PostgreSQL's JDBC driver, as IDEs (DBeaver, IntelliJ), Hibernate's
 * schema validation and Flyway read a schema: getTables, getColumns, getPrimaryKeys,
 * getImportedKeys, getExportedKeys, getIndexInfo. One line per row (the named columns of
 * each), or the error's SQLSTATE.
 * usage: java MetaData JDBC_URL */
public class MetaData {
    static void print(String what, ResultSet r, String... cols) throws SQLException {
        try (r) {
            while (r.next()) {
                StringBuilder out = new StringBuilder(what).append(':');
                for (String c : cols) out.append(' ').append(c).append('=').append(r.getString(c));
                System.out.println(out);
            }
        }
    }

    interface Step { void run() throws SQLException; }

    static void step(String what, Step s) {
        try {
            s.run();
        } catch (SQLException e) {
            System.out.println(what + ": error " + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
        }
    }

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0]); Statement s = c.createStatement()) {
            s.execute("create table md_owner (id serial primary key, name varchar(40) not null unique, score numeric(8,2) default 0)");
            s.execute("create table md_pet (id bigint generated always as identity primary key, owner_id integer not null references md_owner(id) on delete cascade, " +
                "nick text, born date, constraint md_pet_nick_uq unique (owner_id, nick))");
            s.execute("create index md_pet_born_idx on md_pet (born)");
            DatabaseMetaData m = c.getMetaData();
            step("tables", () -> print("tables", m.getTables(null, "public", "md_%", new String[]{"TABLE"}), "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE"));
            step("columns", () -> print("columns", m.getColumns(null, "public", "md_%", "%"), "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME",
                "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "COLUMN_DEF", "ORDINAL_POSITION", "IS_NULLABLE", "IS_AUTOINCREMENT", "IS_GENERATEDCOLUMN"));
            step("pk", () -> print("pk", m.getPrimaryKeys(null, "public", "md_pet"), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME"));
            step("imported", () -> print("imported", m.getImportedKeys(null, "public", "md_pet"), "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME",
                "FKCOLUMN_NAME", "KEY_SEQ", "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME", "DEFERRABILITY"));
            step("exported", () -> print("exported", m.getExportedKeys(null, "public", "md_owner"), "PKTABLE_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "DELETE_RULE", "FK_NAME"));
            step("indexes", () -> print("indexes", m.getIndexInfo(null, "public", "md_pet", false, false), "TABLE_NAME", "NON_UNIQUE", "INDEX_NAME",
                "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC"));
        }
    }
}
