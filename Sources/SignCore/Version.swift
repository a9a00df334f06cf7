public enum SignCoreVersion { public static let spec = "SignCore/1" }
