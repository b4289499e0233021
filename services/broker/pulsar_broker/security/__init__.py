"""Who may do what on this broker: authorization decisions (pure) and the guard that feeds
them the metadata store's tenant and namespace records."""
