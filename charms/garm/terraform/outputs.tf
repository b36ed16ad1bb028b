output "app_name" {
  description = "Name of the deployed application."
  value       = juju_application.garm.name
}

output "requires" {
  description = "Endpoints the application requires, for juju_integration."
  value = {
    certificates      = "certificates"
    database          = "database"
    garm_configurator = "garm-configurator"
  }
}

output "provides" {
  description = "Endpoints the application provides, for juju_integration."
  value = {
    cos_agent = "cos-agent"
  }
}
