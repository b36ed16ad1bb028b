output "app_name" {
  description = "Name of the deployed application."
  value       = juju_application.garm_configurator.name
}

output "requires" {
  description = "Endpoints the application requires, for juju_integration."
  value = {
    image = "image"
  }
}

output "provides" {
  description = "Endpoints the application provides, for juju_integration."
  value = {
    garm_configurator = "garm-configurator"
  }
}
